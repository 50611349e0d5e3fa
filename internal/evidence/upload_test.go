package evidence

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// putRecorder is a hand-written PutAPI that records what it is asked to store.
type putRecorder struct {
	ins    []*s3.PutObjectInput
	bodies []string
	fail   error
}

func (p *putRecorder) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	p.ins = append(p.ins, in)
	b, _ := io.ReadAll(in.Body)
	p.bodies = append(p.bodies, string(b))
	return &s3.PutObjectOutput{}, p.fail
}

// Upload writes the bundle, then its summary, each with the encryption and owner chosen.
func TestUploadInputs(t *testing.T) {
	b := &Bundle{Key: "p/c/g/i/b.tar.gz", SummaryKey: "p/c/g/i/b.json", Tarball: []byte("tgz"), SummaryJSON: []byte("{}\n")}
	loc := Location{Bucket: "bucket-1", Prefix: "p/"}
	for _, tc := range []struct {
		o        Options
		sse, kms string
	}{
		{Options{}, "", ""},
		{Options{SSE: "AES256", ExpectedBucketOwner: "111122223333"}, "AES256", ""},
		{Options{SSE: "aws:kms", KMSKeyID: "arn:aws:kms:us-east-1:111122223333:key/k"}, "aws:kms", "arn:aws:kms:us-east-1:111122223333:key/k"},
	} {
		rec := &putRecorder{}
		require.NoError(t, Upload(context.Background(), rec, tc.o, loc, b))
		require.Len(t, rec.ins, 2)
		require.Equal(t, []string{"p/c/g/i/b.tar.gz", "p/c/g/i/b.json"}, []string{aws.ToString(rec.ins[0].Key), aws.ToString(rec.ins[1].Key)})
		require.Equal(t, []string{"tgz", "{}\n"}, rec.bodies)
		require.Equal(t, "application/gzip", aws.ToString(rec.ins[0].ContentType))
		require.Equal(t, "application/json", aws.ToString(rec.ins[1].ContentType))
		for _, in := range rec.ins {
			require.Equal(t, "bucket-1", aws.ToString(in.Bucket))
			require.Equal(t, tc.sse, string(in.ServerSideEncryption))
			require.Equal(t, tc.kms, aws.ToString(in.SSEKMSKeyId))
			require.Equal(t, tc.o.ExpectedBucketOwner, aws.ToString(in.ExpectedBucketOwner))
		}
	}
	// A failed bundle upload writes no summary: a summary always has its bundle.
	rec := &putRecorder{fail: errors.New("AccessDenied")}
	err := Upload(context.Background(), rec, Options{}, loc, b)
	require.ErrorContains(t, err, "s3://bucket-1/p/c/g/i/b.tar.gz: AccessDenied")
	require.Len(t, rec.ins, 1)
}
