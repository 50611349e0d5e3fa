// Package afterstage is the work done after each stage of the boot, as a boot.Observer: the
// boot's timeline marks, the evidence bundle upload (--evidence-uri) and the metrics textfile
// (--metrics-textfile). None of it changes the boot's course or its exit code.
package afterstage

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/evidence"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// Options are the after-stage flags and what the bundle records of the executor.
type Options struct {
	MetricsFile     string
	Evidence        evidence.Options
	Version, Commit string
	Started         time.Time // when the executor started (the timeline's first mark)
}

// Observer is the boot observer of the timeline marks, the evidence bundle and the metrics
// textfile. None of it changes the boot's course or exit code: a failure is a WARN line (and,
// for the upload, a record status shows).
type Observer struct {
	f Options
	s *boot.Session
	// deferred is the trigger of a bundle left to the next stage of this process (daemon:
	// nodeBootstrapped's failure is packed after nodeReady, so READY=1 never waits on it).
	deferred string
}

// New is the observer of the session s's boot.
func New(o Options, s *boot.Session) *Observer { return &Observer{f: o, s: s} }

// Step records the boot's steps in its timeline (saved with the next state write).
func (a *Observer) Step(_ context.Context, st boot.Step) {
	m := state.Mark{Stage: st.Stage, At: st.At, DurationMS: st.Duration.Milliseconds(), Detail: st.Detail}
	switch st.Kind {
	case boot.StepStarted:
		m.Kind, m.At = state.MarkExecutorStarted, a.f.Started
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
func (a *Observer) StageEnded(ctx context.Context, e boot.StageEnd) {
	out := e.Outcome
	trig, ok := a.f.Evidence.Trigger(out, e.Err)
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
	if a.f.MetricsFile != "" {
		if err := metrics.WriteFile(a.f.MetricsFile, metrics.Families(metrics.Input{Status: a.status(), State: a.s.Store.State})); err != nil {
			a.s.Log.Warn("could not write the metrics textfile", zap.String("path", a.f.MetricsFile), zap.Error(err))
		}
	}
}

// status is the node's status document (what status --json prints).
func (a *Observer) status() *status.Document {
	s := a.s
	return nodestatus.Build(nodestatus.Input{State: s.Store.State, Doc: s.Doc, BootID: s.Node.BootID, InstanceID: s.Node.InstanceID,
		NodeID: s.Node.NodeID})
}

// upload makes and uploads the boot's bundle within --evidence-timeout, and records the
// outcome in the state (status shows it; the metrics report it).
func (a *Observer) upload(ctx context.Context, stageName, trigger string) {
	s, f := a.s, a.f
	t0 := time.Now()
	loc, _ := evidence.ParseURI(f.Evidence.URI) // checked with the flags
	uctx, cancel := context.WithTimeoutCause(ctx, f.Evidence.Timeout, errEvidenceTimeout{f.Evidence.Timeout})
	defer cancel()
	b, err := evidence.Make(evidence.Input{Layout: s.Layout, Node: s.Node, State: s.Store.State, Doc: s.Doc, Status: a.status(),
		Version: f.Version, Commit: f.Commit, Trigger: trigger, Stage: stageName, Now: time.Now()}, f.Evidence, loc)
	if err == nil {
		// The client of the downloads: the same configuration chain and credentials.
		var client evidence.PutAPI
		if client, err = source.NewS3Client(uctx); err == nil {
			err = evidence.Upload(uctx, client, f.Evidence, loc, b)
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
