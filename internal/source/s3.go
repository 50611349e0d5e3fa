package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// NewS3Client builds the S3 client used when Config.S3 is nil, from the standard AWS
// configuration chain (environment, shared config and credentials files, instance role). The
// region comes from the environment or config files, else from the instance metadata service
// (which honours AWS_EC2_METADATA_DISABLED and AWS_EC2_METADATA_SERVICE_ENDPOINT). When an
// endpoint override is configured (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, endpoint_url in the
// config file) the client uses path-style addressing, as S3-compatible servers expect. The
// SDK's own retries are off: the Fetcher's attempts are the only ones, so "3 attempts" means
// 3 requests.
func NewS3Client(ctx context.Context) (*s3.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithEC2IMDSRegion())
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration (set AWS_REGION if the instance metadata service is not available): %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION or allow the instance metadata service")
	}
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		// Keep a connection per concurrent download for reuse (the SDK keeps 10 per host):
		// all scripts of a boot are fetched at once, and the attempts at their turn reuse them.
		// Any CA bundle the configuration set stays in place.
		cfg.HTTPClient = bc.WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
		})
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if aws.ToString(o.BaseEndpoint) != "" {
			o.UsePathStyle = true
		}
		o.RetryMaxAttempts = 1
		// S3-compatible servers often send no response checksum; the SDK would print a DEBUG
		// line for each download on stderr. Integrity is ours to check (size cap, checksum).
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}

// maxIdleConnsPerHost is one per script of a configuration (2 stages of at most 20) and more.
const maxIdleConnsPerHost = 64

// skipSDKChecksum makes one GetObject neither ask for nor verify the SDK's response checksum
// (a CRC computed over the whole body): used when the configuration gives the script's
// SHA-256, which this package verifies anyway. Without a configured checksum the SDK's
// validation stays on, as the only end-to-end check besides TLS.
func skipSDKChecksum(o *s3.Options) {
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

// s3Client returns the configured client, building the default one on first use. A failure
// to build it is not remembered: the next attempt tries again.
func (f *Fetcher) s3Client(ctx context.Context) (S3API, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.s3 != nil {
		return f.s3, nil
	}
	c, err := NewS3Client(ctx)
	if err != nil {
		return nil, err
	}
	f.s3 = c
	return c, nil
}

// getS3 is one GetObject of loc; actx bounds the attempt, ctx is the caller's. It returns the
// body to stream (the caller closes it) and the response's metadata.
func (f *Fetcher) getS3(actx, ctx context.Context, loc string, obj *s3Location, versionID string, max int64, checksum bool) (io.ReadCloser, Result, error) {
	client, err := f.s3Client(actx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, Result{}, failure(ctx, loc, err)
		}
		return nil, Result{}, newError(loc, Other, 0, err)
	}
	in := &s3.GetObjectInput{
		Bucket: aws.String(obj.bucket),
		Key:    aws.String(obj.key),
	}
	if versionID != "" {
		in.VersionId = aws.String(versionID)
	}
	if f.owner != "" {
		in.ExpectedBucketOwner = aws.String(f.owner)
	}
	var opts []func(*s3.Options)
	if checksum {
		opts = append(opts, skipSDKChecksum)
	}
	out, err := client.GetObject(actx, in, opts...)
	if err != nil {
		return nil, Result{}, s3Failure(ctx, loc, err, obj, versionID, f.owner)
	}
	if n := aws.ToInt64(out.ContentLength); n > max {
		out.Body.Close()
		return nil, Result{}, newError(loc, TooLarge, 0, fmt.Errorf("object size %d is over the %d-byte limit", n, max))
	}
	return out.Body, Result{VersionID: aws.ToString(out.VersionId), ETag: aws.ToString(out.ETag)}, nil
}
