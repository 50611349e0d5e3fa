package evidence

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PutAPI is the part of the S3 client an upload uses; *s3.Client implements it.
type PutAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Upload writes the tarball, then the summary (a summary always has its bundle), with o's
// encryption and expected bucket owner. The caller bounds ctx (Options.Timeout).
func Upload(ctx context.Context, client PutAPI, o Options, loc Location, b *Bundle) error {
	put := func(key, ctype string, data []byte) error {
		in := &s3.PutObjectInput{
			Bucket:        aws.String(loc.Bucket),
			Key:           aws.String(key),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			ContentType:   aws.String(ctype),
		}
		if o.SSE != "" {
			in.ServerSideEncryption = types.ServerSideEncryption(o.SSE)
			if o.KMSKeyID != "" {
				in.SSEKMSKeyId = aws.String(o.KMSKeyID)
			}
		}
		if o.ExpectedBucketOwner != "" {
			in.ExpectedBucketOwner = aws.String(o.ExpectedBucketOwner)
		}
		if _, err := client.PutObject(ctx, in); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("s3://%s/%s: %w (%w)", loc.Bucket, key, context.Cause(ctx), err)
			}
			return fmt.Errorf("s3://%s/%s: %w", loc.Bucket, key, err)
		}
		return nil
	}
	if err := put(b.Key, "application/gzip", b.Tarball); err != nil {
		return err
	}
	return put(b.SummaryKey, "application/json", b.SummaryJSON)
}
