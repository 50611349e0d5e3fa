package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/afterstage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/evidence"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
)

// started is about when this process started (the timeline's "executor started").
var started = time.Now().UTC()

func (f *afterFlags) observer(s *boot.Session) boot.Observer {
	return afterstage.New(afterstage.Options{MetricsFile: f.metricsFile, Evidence: f.ev, Version: Version, Commit: Commit, Started: started}, s)
}

// afterFlags are the flags of what happens after each stage of run and daemon: the metrics
// textfile and the evidence bundle.
type afterFlags struct {
	metricsFile string
	ev          evidence.Options
	redact      []string
}

func (f *afterFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.metricsFile, "metrics-textfile", "", "write node_exporter textfile metrics to this file (*.prom) after each stage, atomically (PCS_LIFECYCLE_METRICS_TEXTFILE)")
	fs.StringVar(&f.ev.URI, "evidence-uri", "", "upload an evidence bundle of the boot to s3://bucket/prefix/ (PCS_LIFECYCLE_EVIDENCE_URI)")
	fs.StringVar(&f.ev.On, "evidence-on", evidence.OnTerminate, "when to upload: terminate, failure or always (PCS_LIFECYCLE_EVIDENCE_ON)")
	fs.DurationVar(&f.ev.Timeout, "evidence-timeout", evidence.DefaultTimeout, "bound of one upload; it never holds the boot longer (PCS_LIFECYCLE_EVIDENCE_TIMEOUT)")
	fs.StringArrayVar(&f.redact, "evidence-redact", nil, "regular expression masked as [REDACTED] in every log line of a bundle (repeatable; PCS_LIFECYCLE_EVIDENCE_REDACT adds one)")
	fs.StringVar(&f.ev.SSE, "evidence-sse", "", "server-side encryption of the bundles: AES256, aws:kms or aws:kms:dsse (default: the bucket's) (PCS_LIFECYCLE_EVIDENCE_SSE)")
	fs.StringVar(&f.ev.KMSKeyID, "evidence-sse-kms-key-id", "", "KMS key of --evidence-sse aws:kms (default: the AWS managed key) (PCS_LIFECYCLE_EVIDENCE_SSE_KMS_KEY_ID)")
}

func (f *afterFlags) check(o *Options) error {
	if err := f.ev.Check(); err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	res, err := evidence.CompileRedact(f.redact)
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	f.ev.Redact = res
	f.ev.ExpectedBucketOwner = o.ExpectedBucketOwner
	return nil
}
