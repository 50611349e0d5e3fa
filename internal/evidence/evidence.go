// Package evidence keeps a failed boot's evidence off the node: after a stage it packs this
// boot's executor.log lines, the per-script logs (each capped, the end kept), status --json and
// a manifest (identity, versions, stage results, timings) into
// `<prefix>/<cluster-id>/<compute-node-group-id>/<instance-id>/<boot-id>.tar.gz` and writes a
// one-line `<boot-id>.json` summary beside it (summary.go: a stable schema that `report` and
// Amazon Athena read). It also reads the summaries back for `pcs-lifecycle report`
// (report.go), treating every object under the prefix as hostile.
//
// Evidence is sensitive: the bundle never holds the process environment, every log line and
// every string of status.json and the summary pass through the --evidence-redact patterns,
// and the objects are written with the bucket's default encryption or the one chosen. An
// upload never changes the exit code and never hangs the boot: it is bounded by
// --evidence-timeout, and its failure is one WARN line and a line in status.
package evidence

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// When a bundle is uploaded (--evidence-on).
const (
	OnTerminate = "terminate" // after a stage that ended in TERMINATE (the default)
	OnFailure   = "failure"   // after any stage with a failed script, or an executor failure
	OnAlways    = "always"    // after every stage
)

// DefaultTimeout bounds one upload (both objects), client set-up included.
const DefaultTimeout = 60 * time.Second

// Caps of what a bundle holds from the node's logs; the end is kept.
const (
	MaxScriptLog   = 1 << 20 // per script log
	MaxExecutorLog = 4 << 20 // this boot's executor.log lines
	// executorLogWindow is how much of executor.log's end is read to find this boot's lines.
	executorLogWindow = 16 << 20
)

// Options configure the evidence bundles.
type Options struct {
	URI     string // s3://bucket/prefix/
	On      string // OnTerminate, OnFailure, OnAlways
	Timeout time.Duration
	Redact  []*regexp.Regexp
	// SSE is the server-side encryption of the objects: "" (the bucket's default), AES256,
	// aws:kms or aws:kms:dsse; KMSKeyID the key of the aws:kms ones ("" the AWS managed key).
	SSE                 string
	KMSKeyID            string
	ExpectedBucketOwner string
}

// Location is an s3:// URI split into its bucket and key prefix (no leading slash; ends with
// "/" unless empty).
type Location struct {
	Bucket, Prefix string
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ParseURI splits an s3://bucket/prefix/ URI.
func ParseURI(uri string) (Location, error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("%q: must be s3://bucket/prefix/", uri)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !bucketRE.MatchString(bucket) {
		return Location{}, fmt.Errorf("%q: %q is not a valid bucket name", uri, bucket)
	}
	if strings.ContainsAny(prefix, "?#") {
		if _, err := url.Parse(uri); err != nil {
			return Location{}, fmt.Errorf("%q: %w", uri, err)
		}
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// String is the s3:// URI of the location.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// Check validates the options (flag names in the errors).
// The other flags are checked even without --evidence-uri: a typo is caught before the boot
// that would have needed them.
func (o *Options) Check() error {
	if o.URI != "" {
		if _, err := ParseURI(o.URI); err != nil {
			return fmt.Errorf("--evidence-uri %w", err)
		}
	}
	switch o.On {
	case OnTerminate, OnFailure, OnAlways:
	case "":
		o.On = OnTerminate
	default:
		return fmt.Errorf("--evidence-on %q: must be terminate, failure or always", o.On)
	}
	if o.Timeout < 0 {
		return errors.New("--evidence-timeout cannot be negative")
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch types.ServerSideEncryption(o.SSE) {
	case "", types.ServerSideEncryptionAes256:
		if o.KMSKeyID != "" {
			return errors.New("--evidence-sse-kms-key-id needs --evidence-sse aws:kms or aws:kms:dsse")
		}
	case types.ServerSideEncryptionAwsKms, types.ServerSideEncryptionAwsKmsDsse:
	default:
		return fmt.Errorf("--evidence-sse %q: must be AES256, aws:kms or aws:kms:dsse", o.SSE)
	}
	return nil
}

// CompileRedact compiles --evidence-redact patterns, naming the one that does not compile.
func CompileRedact(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("--evidence-redact %q: %w", p, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("--evidence-redact %q: matches the empty string", p)
		}
		out = append(out, re)
	}
	return out, nil
}

// Trigger says whether a stage's end calls for a bundle under o.On, and names the trigger.
// err is the executor's own failure of the stage (a registration timeout), if any. A stage
// that had already ended this boot, or was refused on an instance already marked failed (its
// bundle was made when the TERMINATE happened), triggers only "always".
func (o Options) Trigger(out stage.Outcome, err error) (string, bool) {
	if o.URI == "" {
		return "", false
	}
	terminated := out.Status == state.StageTerminated && !out.AlreadyRan
	failed := err != nil || (!out.AlreadyRan && out.Status != state.StageRefused && (out.ExitCode != exitcode.OK || len(out.Failures) > 0))
	switch {
	case terminated:
		return OnTerminate, true
	case o.On == OnFailure && failed:
		return OnFailure, true
	case o.On == OnAlways:
		return OnAlways, true
	}
	return "", false
}
