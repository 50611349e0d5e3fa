package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/evidence"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// started is about when this process started (the timeline's "executor started").
var started = time.Now().UTC()

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

// afterStage is the boot observer of the timeline marks, the evidence bundle and the metrics
// textfile. None of it changes the boot's course or exit code: a failure is a WARN line (and,
// for the upload, a record status shows).
type afterStage struct {
	f *afterFlags
	s *boot.Session
	// deferred is the trigger of a bundle left to the next stage of this process (daemon:
	// nodeBootstrapped's failure is packed after nodeReady, so READY=1 never waits on it).
	deferred string
}

func (f *afterFlags) observer(s *boot.Session) *afterStage { return &afterStage{f: f, s: s} }

// Step records the boot's steps in its timeline (saved with the next state write).
func (a *afterStage) Step(_ context.Context, st boot.Step) {
	m := state.Mark{Stage: st.Stage, At: st.At, DurationMS: st.Duration.Milliseconds(), Detail: st.Detail}
	switch st.Kind {
	case boot.StepStarted:
		m.Kind, m.At = state.MarkExecutorStarted, started
	case boot.StepReady:
		m.Kind = state.MarkReady
	case boot.StepRegistration:
		m.Kind = state.MarkRegistrationWait
	default:
		return
	}
	a.s.Store.State.EnsureBoot(a.s.Node.BootID, m.At).AddMark(m)
}

// StageEnded uploads the evidence bundle when the outcome calls for one, then writes the
// metrics textfile.
func (a *afterStage) StageEnded(ctx context.Context, e boot.StageEnd) {
	out := e.Outcome
	trig, ok := a.f.ev.Trigger(out, e.Err)
	if !ok && a.deferred != "" {
		trig, ok = a.deferred, true
	}
	switch {
	case !ok || ctx.Err() != nil || out.Interrupted:
	case !e.Final && trig != evidence.OnTerminate:
		a.deferred = trig
	default:
		a.deferred = ""
		a.upload(ctx, e.Stage, trig)
	}
	if a.f.metricsFile != "" {
		if err := metrics.WriteFile(a.f.metricsFile, metrics.Families(metrics.Input{Status: a.status(), State: a.s.Store.State})); err != nil {
			a.s.Log.Warn("could not write the metrics textfile", zap.String("path", a.f.metricsFile), zap.Error(err))
		}
	}
}

// status is the node's status document (what status --json prints).
func (a *afterStage) status() *status.Document {
	s := a.s
	return nodestatus.Build(nodestatus.Input{State: s.Store.State, Doc: s.Doc, BootID: s.Node.BootID, InstanceID: s.Node.InstanceID,
		NodeID: s.Node.NodeID})
}

// upload makes and uploads the boot's bundle within --evidence-timeout, and records the
// outcome in the state (status shows it; the metrics report it).
func (a *afterStage) upload(ctx context.Context, stageName, trigger string) {
	s, f := a.s, a.f
	t0 := time.Now()
	loc, _ := evidence.ParseURI(f.ev.URI) // checked with the flags
	uctx, cancel := context.WithTimeoutCause(ctx, f.ev.Timeout, errEvidenceTimeout{f.ev.Timeout})
	defer cancel()
	b, err := evidence.Make(evidence.Input{Layout: s.Layout, Node: s.Node, State: s.Store.State, Doc: s.Doc, Status: a.status(),
		Version: Version, Commit: Commit, Trigger: trigger, Stage: stageName, Now: time.Now()}, f.ev, loc)
	if err == nil {
		// The client of the downloads: the same configuration chain and credentials.
		var client evidence.PutAPI
		if client, err = source.NewS3Client(uctx); err == nil {
			err = evidence.Upload(uctx, client, f.ev, loc, b)
		}
	}
	d := time.Since(t0)
	rec := &state.Evidence{At: t0.UTC(), Stage: stageName, OK: err == nil, DurationMS: d.Milliseconds()}
	m := state.Mark{Kind: state.MarkEvidence, Stage: stageName, At: t0, DurationMS: d.Milliseconds(), Detail: "uploaded"}
	if err != nil {
		rec.Error, m.Detail = err.Error(), "failed"
		s.Log.Warn("evidence upload failed; the boot goes on", zap.String("stage", stageName), zap.String("uri", loc.String()),
			zap.Int64("duration_ms", d.Milliseconds()), zap.Error(err))
	} else {
		rec.URI = "s3://" + loc.Bucket + "/" + b.Key
		s.Log.Info("evidence uploaded", zap.String("stage", stageName), zap.String("trigger", trigger), zap.String("uri", rec.URI),
			zap.Int("bytes", len(b.Tarball)), zap.Int64("duration_ms", d.Milliseconds()))
	}
	bt := s.Store.State.EnsureBoot(s.Node.BootID, t0)
	bt.Evidence = rec
	bt.AddMark(m)
	if serr := s.Store.Save(); serr != nil {
		s.Log.Warn("could not record the evidence upload in the state", zap.Error(serr))
	}
}

type errEvidenceTimeout struct{ d time.Duration }

func (e errEvidenceTimeout) Error() string { return "--evidence-timeout " + e.d.String() + " expired" }
