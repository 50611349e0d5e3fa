// Package stage runs one lifecycle stage on one boot: it downloads what the boot needs (all
// scripts of both stages, concurrently, once per boot), decides for each script whether it
// runs, verifies the cached copy, executes it, writes its log and the executor log, records
// the outcome in the state and applies its onError.
package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/decide"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/proc"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/programs"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/scriptlog"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Downloader fetches a script's bytes; retry false means a single attempt.
type Downloader interface {
	Download(ctx context.Context, src lifecycle.ScriptSource, retry bool) ([]byte, error)
}

// CacheDownloader is a Downloader that streams a script straight into the cache, never holding
// it whole in memory (the executor's own); the runner prefers it. It returns the cached
// copy's SHA-256 (lowercase hex) and size.
type CacheDownloader interface {
	DownloadToCache(ctx context.Context, c ScriptWriter, name string, src lifecycle.ScriptSource, retry bool) (digest string, size int64, err error)
}

// ScriptWriter stores a script in the cache as it streams in (*cache.Cache).
type ScriptWriter interface {
	PutScriptFrom(name string, fill func(w cache.Temp) (digest string, err error)) (path, digest string, err error)
}

// Cache is what the runner needs of the script cache (*cache.Cache).
type Cache interface {
	ScriptWriter
	PutScript(name string, data []byte) (path, digest string, err error)
	HasScript(name string) bool
	// Verify checks the cached copy of name against digest and returns its path and first bytes.
	Verify(name, digest string) (path string, head []byte, err error)
}

// Store is what the runner needs of the node's state (*state.Store): the state in memory,
// saved whole or journalled one event at a time.
type Store interface {
	Current() *state.State
	Save() error
	Record(e *state.Event, durable bool) error
	// Flush waits until every event recorded so far is on disk.
	Flush() error
}

// fetch puts the current content of s into the cache and returns its digest and size.
func (r *Runner) fetch(ctx context.Context, s lifecycle.Script, retry bool) (string, int64, error) {
	if cd, ok := r.Downloader.(CacheDownloader); ok {
		return cd.DownloadToCache(ctx, r.Cache, s.Name, s.ScriptSource, retry)
	}
	data, err := r.Downloader.Download(ctx, s.ScriptSource, retry)
	if err != nil {
		return "", 0, err
	}
	_, digest, err := r.Cache.PutScript(s.Name, data)
	return digest, int64(len(data)), err
}

// Observer hears about scripts as they start and end (sd_notify STATUS, for instance).
type Observer interface {
	ScriptStarted(stage, name string)
	ScriptEnded(stage, name string, run *state.ScriptRun)
}

// BaseEnv is the fixed part of every script's environment.
var BaseEnv = []string{
	"PATH=" + programs.ScriptPATH,
	"HOME=/root",
	"LANG=C.UTF-8",
}

// PassThroughEnv names the caller's variables handed to scripts when set.
var PassThroughEnv = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SLURM_CONF", "SLURM_CONF_SERVER",
}

// Runner runs stages of one boot. The caller holds the state lock.
type Runner struct {
	Layout        paths.Layout
	Log           *zap.Logger
	Doc           *lifecycle.Document
	Node          identity.Node
	Store         Store
	Cache         Cache
	Downloader    Downloader
	Observer      Observer
	Force         bool
	ScriptTimeout time.Duration
	StageTimeout  map[string]time.Duration
	KillGrace     time.Duration
	Now           func() time.Time
}

// Outcome is how a stage ended.
type Outcome struct {
	Stage       string
	ExitCode    int
	Status      state.StageStatus
	Interrupted bool
	Failures    []Failure
	AlreadyRan  bool
}

// Failure is one failed script.
type Failure struct {
	Stage, Script string
	Status        state.ScriptStatus
	ExitCode      int
	Signal        string
	OnError       lifecycle.OnError
	Err           string
}

var errStageTimeout = errors.New("stage timeout")

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *Runner) boot() *state.Boot { return r.Store.Current().EnsureBoot(r.Node.BootID, r.now()) }

// OnErrorName is onError as the executor log spells it (observed: "StopSequence").
func OnErrorName(o lifecycle.OnError) string {
	switch o {
	case lifecycle.Terminate:
		return "Terminate"
	case lifecycle.StopSequence:
		return "StopSequence"
	case lifecycle.Continue:
		return "Continue"
	}
	return string(o)
}

// Decide is the run decision for one script of the stage in the current state (plan and
// status use it too, through DecideIn).
func (r *Runner) Decide(stage string, s lifecycle.Script) decide.Decision {
	return DecideIn(r.Store.Current(), r.Node.BootID, stage, s, r.Force)
}

// DecideIn asks decide.Run with the inputs taken from st for bootID.
func DecideIn(st *state.State, bootID, stage string, s lifecycle.Script, force bool) decide.Decision {
	in := decide.Input{Policy: s.ExecutionPolicy, Force: force, FirstBoot: st.FirstBootID == bootID}
	if b := st.Boot(bootID); b != nil {
		if sr := b.Stages[stage]; sr != nil && sr.Status.Resumable() {
			in.ThisBoot = sr.Script(s.Name)
		}
	}
	in.History = st.Scripts[state.Key(stage, s.Name)]
	if fb := st.FirstBootStage(stage); fb != nil && !fb.Status.Resumable() {
		in.FirstBootStageEnded = true
	}
	return decide.Run(in)
}

// FetchDecision says whether the script must be downloaded this boot.
// hasCopy tells whether a cached file exists for a script name (cache.HasScript, or an
// assumption when planning a boot that has not happened).
func FetchDecision(st *state.State, hasCopy func(name string) bool, bootID string, caching lifecycle.CachingPolicy, stage, name string) decide.Decision {
	h := st.Scripts[state.Key(stage, name)]
	in := decide.FetchInput{Caching: caching}
	// A recorded digest means a copy was cached for this instance: if the file is gone or
	// changed, obtain reports it as a download failure; CACHE_ONCE never fetches it silently.
	if h != nil && h.Digest != "" && (hasCopy(name) || caching == lifecycle.CacheOnce) {
		in.Cached = true
		in.FetchedThisBoot = h.FetchedBoot == bootID
	}
	return decide.Fetch(in)
}

type job struct {
	stage string
	s     lifecycle.Script
}

// Prefetch downloads, concurrently, every script of both stages that will run this boot and
// is not usable from the cache. It runs once per boot (a prefetch cut short by a signal is
// done again by the resumed run); failures are logged and left for the script's turn.
func (r *Runner) Prefetch(ctx context.Context) error {
	if b := r.boot(); b.Prefetched && !r.Force {
		return nil
	}
	var jobs []job
	for _, stage := range lifecycle.Stages {
		for _, s := range r.Doc.Scripts(stage) {
			if !r.Decide(stage, s).Run {
				continue
			}
			fd := FetchDecision(r.Store.Current(), r.Cache.HasScript, r.Node.BootID, r.Doc.ScriptCachingPolicy, stage, s.Name)
			if fd.Run {
				jobs = append(jobs, job{stage, s})
			}
		}
	}
	return r.download(ctx, jobs)
}

// FetchAll downloads every script of the document again, concurrently, whatever this boot
// would run or the cache holds (the fetch command).
func (r *Runner) FetchAll(ctx context.Context) error {
	var jobs []job
	for _, stage := range lifecycle.Stages {
		for _, s := range r.Doc.Scripts(stage) {
			jobs = append(jobs, job{stage, s})
		}
	}
	return r.download(ctx, jobs)
}

func (r *Runner) download(ctx context.Context, jobs []job) error {
	type result struct {
		digest string
		err    error
		dur    time.Duration
		size   int64
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	start := time.Now()
	startAt := r.now()
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			var res result
			res.digest, res.size, res.err = r.fetch(ctx, j.s, true)
			res.dur = time.Since(t0)
			results[i] = res
		}()
	}
	wg.Wait()
	at := r.now()
	failed := 0
	for i, j := range jobs {
		res := results[i]
		if res.err != nil {
			failed++
			r.Log.Warn("download failed; one more attempt at the script's turn",
				zap.String("stage", j.stage), zap.String("script", j.s.Name),
				zap.String("location", j.s.ScriptSource.ScriptLocation), zap.Int64("duration_ms", res.dur.Milliseconds()),
				zap.Error(res.err))
			continue
		}
		h := r.Store.Current().History(j.stage, j.s.Name)
		h.Digest, h.Location, h.FetchedBoot, h.FetchedAt = res.digest, j.s.ScriptSource.ScriptLocation, r.Node.BootID, &at
		r.Log.Info("Downloaded script", zap.String("stage", j.stage), zap.String("script", j.s.Name),
			zap.String("location", j.s.ScriptSource.ScriptLocation), zap.Int64("bytes", res.size),
			zap.String("sha256", res.digest), zap.Int64("duration_ms", res.dur.Milliseconds()))
	}
	if len(jobs) > 0 {
		r.boot().AddMark(state.Mark{Kind: state.MarkDownloads, At: startAt, DurationMS: time.Since(start).Milliseconds(),
			Detail: fmt.Sprintf("%d scripts, %d failed", len(jobs), failed)})
	}
	if ctx.Err() != nil {
		r.Log.Warn("downloads interrupted", zap.Int("scripts", len(jobs)), zap.Int64("duration_ms", time.Since(start).Milliseconds()))
		return r.Store.Save()
	}
	if len(jobs) > 0 {
		r.Log.Info("downloads finished", zap.Int("scripts", len(jobs)), zap.Int64("duration_ms", time.Since(start).Milliseconds()))
	}
	r.boot().Prefetched = true
	return r.Store.Save()
}

// RunStage runs stage on this boot. The error is the executor's own failure (state, disk);
// script failures are in the Outcome. Its steps: refuse on an instance a TERMINATE marked
// failed; open the stage's record (new, resumed after a kill, or already ran this boot);
// download what the boot needs; give each script its turn; record how the stage ended.
func (r *Runner) RunStage(ctx context.Context, stage string) (Outcome, error) {
	run := &stageRun{r: r, name: stage, log: r.Log.With(zap.String("stage", stage)), out: Outcome{Stage: stage}}
	if run.refuse() || run.open() {
		return run.out, nil
	}
	if err := r.Store.Save(); err != nil {
		return run.out, err
	}
	if err := r.Prefetch(ctx); err != nil {
		return run.out, err
	}
	scripts := r.Doc.Scripts(stage)
	run.log.Info("stage started", zap.Int("scripts", len(scripts)), zap.Bool("first_boot", r.boot().FirstBoot))
	run.start = time.Now()
	sctx := ctx
	if d := r.StageTimeout[stage]; d > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, d, errStageTimeout)
		defer cancel()
	}
	for _, s := range scripts {
		if err := run.turn(ctx, sctx, s); err != nil || run.out.Interrupted {
			return run.out, err
		}
	}
	return run.out, run.finish()
}

// stageRun is one run of one stage: what a script's turn leaves for the next.
type stageRun struct {
	r      *Runner
	name   string
	log    *zap.Logger
	sr     *state.StageRun
	out    Outcome
	result int       // the stage's exit code so far
	stop   string    // why the remaining scripts do not run ("" while they do)
	start  time.Time // when the first script's turn came
}

// refuse: an instance a TERMINATE marked failed runs nothing more (exit 4) unless --force.
func (run *stageRun) refuse() bool {
	t := run.r.Store.Current().Terminated
	if t == nil || run.r.Force {
		return false
	}
	run.log.Error("instance was terminated by an earlier TERMINATE; running nothing (--force overrides)",
		zap.String("terminated_by", t.Stage+"/"+t.Script), zap.String("terminated_boot_id", t.BootID))
	run.out.ExitCode, run.out.Status = exitcode.Terminate, state.StageRefused
	return true
}

// open finds or starts the stage's record of this boot. It reports true when the stage
// already ran this boot: nothing to do, its recorded result stands.
func (run *stageRun) open() bool {
	r := run.r
	b := r.boot()
	sr := b.Stages[run.name]
	switch {
	case sr != nil && !sr.Status.Resumable() && !r.Force:
		run.log.Info("stage already ran this boot; nothing to do (--force runs it again)",
			zap.String("status", string(sr.Status)), zap.Int("exit_code", sr.ExitCode))
		run.out.ExitCode, run.out.Status, run.out.AlreadyRan = sr.ExitCode, sr.Status, true
		return true
	case sr != nil && !r.Force:
		run.resume(sr)
	default:
		sr = &state.StageRun{Status: state.StageRunning, StartedAt: r.now(), PID: os.Getpid(), Forced: r.Force}
		b.Stages[run.name] = sr
	}
	run.sr = sr
	return false
}

// resume takes over a stage cut short earlier in this boot: what is left of a script the
// dead executor ran is stopped (never twice at once), and that script counts as interrupted,
// so it runs again.
func (run *stageRun) resume(sr *state.StageRun) {
	r := run.r
	run.log.Warn("resuming a stage cut short earlier in this boot", zap.Int("previous_pid", sr.PID))
	for _, s := range sr.Scripts {
		if s.Status != state.ScriptRunning {
			continue
		}
		if s.PGID > 0 {
			marks := []string{"PCS_LIFECYCLE_STAGE=" + run.name, "PCS_LIFECYCLE_SCRIPT=" + s.Name, "PCS_INSTANCE_ID=" + r.Node.InstanceID}
			if n, err := proc.KillOrphanGroup(s.PGID, marks, r.killGrace()); n > 0 {
				run.log.Warn("stopped what was left of the interrupted run", zap.String("script", s.Name),
					zap.Int("pgid", s.PGID), zap.Int("processes", n), zap.Error(err))
			}
		}
		s.Status, s.Reason = state.ScriptInterrupted, "executor stopped while it ran"
		if h := r.Store.Current().Scripts[state.Key(run.name, s.Name)]; h != nil {
			h.Last = s
		}
	}
	sr.Status, sr.PID = state.StageRunning, os.Getpid()
}

// turn is one script's turn: not run (an earlier failure stopped the stage, or its timeout
// passed), the stage interrupted before it, skipped by the run decision, or run; a failure's
// onError applies.
func (run *stageRun) turn(ctx, sctx context.Context, s lifecycle.Script) error {
	r := run.r
	slog := run.log.With(zap.String("script", s.Name))
	switch {
	case run.stop != "":
		slog.Info("skipping script", zap.String("reason", run.stop))
		return r.record(run.name, &state.ScriptRun{Name: s.Name, Status: state.ScriptNotRun, Reason: run.stop}, nil, false)
	case sctx.Err() != nil && ctx.Err() == nil:
		run.stop = "stage timeout expired"
		run.result = exitcode.Worst(run.result, exitcode.Failed)
		slog.Error("skipping script", zap.String("reason", run.stop))
		return r.record(run.name, &state.ScriptRun{Name: s.Name, Status: state.ScriptNotRun, Reason: run.stop}, nil, false)
	case ctx.Err() != nil:
		// Stopped between scripts (or during the downloads): nothing more starts, and no
		// script is charged with a run that never happened.
		slog.Warn("stage interrupted before script")
		return run.interrupted()
	}
	d := r.Decide(run.name, s)
	if !d.Run && d.Reason == decide.ReasonDoneThisBoot {
		// A stage resumed after a kill: this script's outcome stands as recorded, and a
		// failure's onError holds again (STOP_SEQUENCE still stops, CONTINUE still counts).
		slog.Info("skipping script", zap.String("reason", d.Reason))
		if prev := run.sr.Script(s.Name); prev != nil && (prev.Status == state.ScriptFailed || prev.Status == state.ScriptDownloadFailed) {
			return run.failed(s, prev, slog, true)
		}
		return nil
	}
	if !d.Run {
		slog.Info("skipping script", zap.String("reason", d.Reason), zap.String("execution_policy", string(s.ExecutionPolicy)))
		return r.record(run.name, &state.ScriptRun{Name: s.Name, Status: state.ScriptSkipped, Reason: d.Reason}, nil, false)
	}
	end, err := r.runScript(sctx, run.name, s, d, slog)
	switch {
	case err != nil:
		return err
	case end.Status == state.ScriptInterrupted:
		run.log.Warn("stage interrupted", zap.Int64("duration_ms", time.Since(run.start).Milliseconds()))
		return run.interrupted()
	case end.Status == state.ScriptSucceeded:
		return nil
	}
	return run.failed(s, end, slog, false)
}

// failed applies a failed script's onError to the stage.
func (run *stageRun) failed(s lifecycle.Script, end *state.ScriptRun, log *zap.Logger, earlier bool) error {
	code, halt, err := run.r.applyFailure(run.name, s, end, &run.out, log, earlier)
	run.result = exitcode.Worst(run.result, code)
	if halt != "" {
		run.stop = halt
	}
	return err
}

// interrupted records the stage as interrupted (a signal): it is resumed by the next run.
func (run *stageRun) interrupted() error {
	now := run.r.now()
	run.sr.Status, run.sr.EndedAt, run.sr.ExitCode = state.StageInterrupted, &now, exitcode.Failed
	run.out.Interrupted, run.out.Status, run.out.ExitCode = true, run.sr.Status, exitcode.Failed
	return run.r.Store.Save()
}

// finish records how the stage ended: succeeded (0), failed (3) or terminated (4).
func (run *stageRun) finish() error {
	now := run.r.now()
	sr := run.sr
	sr.EndedAt, sr.ExitCode = &now, run.result
	switch run.result {
	case exitcode.OK:
		sr.Status = state.StageSucceeded
	case exitcode.Terminate:
		sr.Status = state.StageTerminated
	default:
		sr.Status = state.StageFailed
	}
	run.out.Status, run.out.ExitCode = sr.Status, run.result
	lvl := run.log.Info
	if run.result != exitcode.OK {
		lvl = run.log.Warn
	}
	lvl("stage finished", zap.String("status", string(sr.Status)), zap.Int("exit_code", run.result),
		zap.Int64("duration_ms", time.Since(run.start).Milliseconds()))
	return run.r.Store.Save()
}

func (r *Runner) killGrace() time.Duration {
	if r.KillGrace > 0 {
		return r.KillGrace
	}
	return proc.DefaultKillGrace
}

// applyFailure applies a failed script's onError: it returns the stage result it implies and,
// for STOP_SEQUENCE and TERMINATE, the reason the remaining scripts do not run. A TERMINATE
// marks the instance failed durably at once. earlier: the failure was recorded earlier in
// this boot (a resumed stage), so it is not logged as new.
func (r *Runner) applyFailure(stage string, s lifecycle.Script, run *state.ScriptRun, out *Outcome, log *zap.Logger, earlier bool) (int, string, error) {
	f := Failure{Stage: stage, Script: s.Name, Status: run.Status, Signal: run.Signal, OnError: s.OnError, Err: run.Error}
	if run.ExitCode != nil {
		f.ExitCode = *run.ExitCode
	}
	out.Failures = append(out.Failures, f)
	fields := []zap.Field{zap.String("on_error", OnErrorName(s.OnError)), zap.String("status", string(run.Status))}
	if run.ExitCode != nil {
		fields = append(fields, zap.Int("exit_code", *run.ExitCode))
	}
	if run.Signal != "" {
		fields = append(fields, zap.String("signal", run.Signal))
	}
	if run.Error != "" {
		fields = append(fields, zap.String("error", run.Error))
	}
	lvl := log.Error
	prefix := ""
	if earlier {
		lvl, prefix = log.Warn, "earlier in this boot: "
	}
	switch s.OnError {
	case lifecycle.Terminate:
		lvl(prefix+"lifecycle script failed; terminating: nothing more runs on this node", fields...)
		st := r.Store.Current()
		if st.Terminated == nil || r.Force {
			st.Terminated = &state.Termination{BootID: r.Node.BootID, Stage: stage, Script: s.Name, ExitCode: f.ExitCode,
				Signal: f.Signal, Reason: string(run.Status), At: r.now()}
			// Durable now: a kill before the stage's end must not forget the node is condemned.
			if err := r.Store.Save(); err != nil {
				return exitcode.Terminate, "", err
			}
		}
		return exitcode.Terminate, "an earlier script failed under TERMINATE", nil
	case lifecycle.StopSequence:
		lvl(prefix+"lifecycle script failed; stopping remaining scripts", fields...)
		return exitcode.Failed, "an earlier script failed under STOP_SEQUENCE", nil
	}
	lvl(prefix+"lifecycle script failed; continuing with remaining scripts", fields...)
	return exitcode.Failed, "", nil
}

// RecordRegistrationTimeout records that stage did not run because the node never
// registered: status then reports it (exit 1) and wait returns instead of blocking.
func (r *Runner) RecordRegistrationTimeout(stage, why string) error {
	b := r.boot()
	now := r.now()
	sr := b.Stages[stage]
	if sr == nil || !sr.Status.Resumable() || r.Force {
		sr = &state.StageRun{StartedAt: now, PID: os.Getpid()}
		b.Stages[stage] = sr
	}
	sr.Status, sr.ExitCode, sr.EndedAt = state.StageNotRegistered, exitcode.Internal, &now
	r.Log.Info("recorded: stage not run, node not registered", zap.String("stage", stage), zap.String("error", why))
	return r.Store.Save()
}

// record journals a script run; durable when it is an end a later boot must not forget.
func (r *Runner) record(stage string, run *state.ScriptRun, c *state.CacheRec, durable bool) error {
	return r.Store.Record(&state.Event{BootID: r.Node.BootID, Stage: stage, Run: run, Cache: c}, durable)
}

// obtain returns the path and first bytes of the verified cached copy of s for this boot, downloading it at its turn (one
// attempt) when the prefetch did not leave a usable copy.
func (r *Runner) obtain(ctx context.Context, stage string, s lifecycle.Script, log *zap.Logger) (string, []byte, *state.CacheRec, error) {
	st := r.Store.Current()
	fd := FetchDecision(st, r.Cache.HasScript, r.Node.BootID, r.Doc.ScriptCachingPolicy, stage, s.Name)
	var rec *state.CacheRec
	if fd.Run {
		t0 := time.Now()
		digest, size, err := r.fetch(ctx, s, false)
		if err != nil {
			return "", nil, nil, err // the source's error names the location
		}
		rec = &state.CacheRec{Digest: digest, Location: s.ScriptSource.ScriptLocation, At: r.now()}
		log.Info("Downloaded script at its turn", zap.String("location", s.ScriptSource.ScriptLocation),
			zap.Int64("bytes", size), zap.String("sha256", digest), zap.Int64("duration_ms", time.Since(t0).Milliseconds()))
	} else if fd.Reason == decide.FetchCachedOnce {
		log.Info(decide.FetchReuseCacheOnce)
	} else {
		log.Info("Using the cached copy downloaded this boot", zap.String("reason", fd.Reason))
	}
	digest := ""
	if rec != nil {
		digest = rec.Digest
	} else if h := st.Scripts[state.Key(stage, s.Name)]; h != nil {
		digest = h.Digest
	}
	p, head, err := r.Cache.Verify(s.Name, digest)
	if err != nil {
		var te *cache.TamperedError
		switch {
		case errors.As(err, &te):
			log.Error("cached script failed verification; not executing it", zap.String("path", te.Path), zap.Error(te))
		case errors.Is(err, os.ErrNotExist):
			log.Error("cached script is missing; not downloading it again (CACHE_ONCE)", zap.String("path", p))
			err = fmt.Errorf("cached copy %s is missing (removed since it was downloaded)", p)
		}
		return "", nil, rec, err
	}
	return p, head, rec, nil
}

// Env is the environment of one script.
func (r *Runner) Env(stage, name string, firstBoot bool) []string {
	env := append([]string(nil), BaseEnv...)
	for _, k := range PassThroughEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	fb := "0"
	if firstBoot {
		fb = "1"
	}
	n := r.Node
	env = append(env,
		"PCS_CLUSTER_ID="+n.ClusterID,
		"PCS_CLUSTER_NAME="+n.ClusterName,
		"PCS_COMPUTE_NODE_GROUP_ID="+n.ComputeNodeGroupID,
		"PCS_COMPUTE_NODE_GROUP_NAME="+n.ComputeNodeGroupName,
		"PCS_NODE_ID="+n.NodeID,
		"PCS_IS_FIRST_BOOT="+fb,
		"PCS_LIFECYCLE_STAGE="+stage,
		"PCS_LIFECYCLE_SCRIPT="+name,
		"PCS_INSTANCE_ID="+n.InstanceID,
	)
	if n.Region != "" {
		env = append(env, "AWS_REGION="+n.Region)
	}
	return env
}

// runScript is one script's run: obtain its verified copy, open its log and record its
// start, execute it, record its end. A download failure is the script's (its onError
// applies); an error returned is the executor's (state, disk).
func (r *Runner) runScript(ctx context.Context, stage string, s lifecycle.Script, d decide.Decision, log *zap.Logger) (*state.ScriptRun, error) {
	p, head, rec, err := r.obtain(ctx, stage, s, log)
	if err != nil {
		run := &state.ScriptRun{Name: s.Name, Status: state.ScriptDownloadFailed, Error: err.Error()}
		if ctx.Err() != nil && context.Cause(ctx) != errStageTimeout {
			run.Status = state.ScriptInterrupted
		}
		return run, r.record(stage, run, rec, true)
	}
	slog, run, err := r.startScript(stage, s, d, rec)
	if err != nil {
		return nil, err
	}
	res, err := r.execScript(ctx, stage, s, p, head, run, slog, log)
	var notStarted *startError
	if err != nil && !errors.As(err, &notStarted) {
		return nil, err // the start could not be made durable
	}
	end, logErr := endScript(ctx, run, res, err, slog, r.now())
	if res.Truncated {
		log.Warn("script output truncated in its log", zap.Int64("output_bytes", res.OutputBytes))
	}
	// An interrupted run is not an end: the history keeps the script pending, so it runs again.
	if err := r.record(stage, end, nil, true); err != nil {
		return nil, err
	}
	if logErr != nil {
		// The script's outcome is recorded; its log is not whole (a full disk): the executor
		// failed, exit 1, and the operator must know.
		log.Error("could not write the script's log", zap.String("path", r.Layout.ScriptLog(stage, s.Name)), zap.Error(logErr))
		return nil, fmt.Errorf("script log %s: %w", r.Layout.ScriptLog(stage, s.Name), logErr)
	}
	logEnd(log, end)
	if r.Observer != nil {
		r.Observer.ScriptEnded(stage, s.Name, end)
	}
	return end, nil
}

// startScript opens the script's log, then records its start. The log first: a script whose
// log cannot be written does not run (a disk failure is the executor's, exit 1), and is not
// recorded as started.
func (r *Runner) startScript(stage string, s lifecycle.Script, d decide.Decision, rec *state.CacheRec) (*scriptlog.Run, *state.ScriptRun, error) {
	started := r.now()
	slog, err := scriptlog.Start(r.Layout.StageLogDir(stage), r.Layout.ScriptLog(stage, s.Name), s.Name, s.Arguments, started)
	if err != nil {
		return nil, nil, err
	}
	run := &state.ScriptRun{Name: s.Name, Status: state.ScriptRunning, StartedAt: &started, Reason: d.Reason}
	if err := r.record(stage, run, rec, false); err != nil {
		slog.Close()
		return nil, nil, err
	}
	return slog, run, nil
}

// execScript runs the cached copy at p (through the shell when it has no "#!"), its output
// into its log. An error is the executor's (the start could not be made durable), or a
// *startError: the program could not be started.
func (r *Runner) execScript(ctx context.Context, stage string, s lifecycle.Script, p string, head []byte, run *state.ScriptRun,
	slog *scriptlog.Run, log *zap.Logger) (proc.Result, error) {
	argv, path := s.Arguments, p
	if !bytes.HasPrefix(head, []byte("#!")) {
		path, argv = programs.Shell, append([]string{p}, s.Arguments...)
	}
	if r.Observer != nil {
		r.Observer.ScriptStarted(stage, s.Name)
	}
	// The previous script's end must be on disk before this one can act: a script may reboot
	// the node (reboot -f skips the page cache), and a finished FIRST_BOOT_ONLY script must
	// not run again. Its flush started when it ended and overlapped this script's preparation.
	if err := r.Store.Flush(); err != nil {
		slog.Close()
		return proc.Result{}, err
	}
	log.Info("starting script", zap.String("reason", run.Reason), zap.Strings("arguments", s.Arguments))
	var pgidErr error
	res, err := proc.Run(ctx, proc.Spec{
		Path: path, Args: argv, Env: r.Env(stage, s.Name, r.boot().FirstBoot), Dir: "/",
		Output: slog, MaxOutput: scriptlog.MaxOutput, Timeout: r.ScriptTimeout, KillGrace: r.KillGrace,
		Started: func(pid int) {
			// Recorded so that a run resuming after this executor died can stop what is left.
			running := *run
			running.PGID = pid
			pgidErr = r.record(stage, &running, nil, false)
		},
	})
	if err == nil && pgidErr != nil {
		slog.Close()
		return res, pgidErr
	}
	if err != nil {
		return res, &startError{err}
	}
	return res, nil
}

// startError is a script that could not be started (not a valid executable, say).
type startError struct{ error }

func (e *startError) Unwrap() error { return e.error }

// endScript is how the run ended, written to its log: failed, succeeded, interrupted or cut
// by a timeout. logErr is a log that could not be written whole.
func endScript(ctx context.Context, run *state.ScriptRun, res proc.Result, err error, slog *scriptlog.Run, now time.Time) (*state.ScriptRun, error) {
	end := &state.ScriptRun{Name: run.Name, StartedAt: run.StartedAt, Reason: run.Reason, DurationMS: res.Duration.Milliseconds()}
	if err != nil && ctx.Err() != nil {
		// Cancelled before it could start: an interruption, not a failure of the script.
		res, err = proc.Result{ExitCode: -1, Signal: "TERM", Canceled: true}, nil
	}
	if err != nil {
		code := 126
		end.Status, end.ExitCode, end.Error = state.ScriptFailed, &code, errors.Unwrap(err).Error()
		_, werr := fmt.Fprintf(slog, "pcs-lifecycle: cannot execute: %v\n", errors.Unwrap(err))
		return end, errors.Join(werr, slog.End(scriptlog.Outcome{ExitCode: code}, now))
	}
	code := res.ExitCode
	end.ExitCode, end.Signal, end.TimedOut = &code, res.Signal, res.TimedOut
	end.Status = state.ScriptSucceeded
	switch {
	case res.Canceled && context.Cause(ctx) == errStageTimeout:
		end.Status, end.TimedOut, end.Error = state.ScriptFailed, true, "stage timeout expired"
	case res.Canceled:
		end.Status, end.Error = state.ScriptInterrupted, "executor interrupted: "+causeText(ctx)
	case res.TimedOut:
		end.Status, end.Error = state.ScriptFailed, "script timeout expired"
	case res.Failed():
		end.Status = state.ScriptFailed
	}
	logErr := res.OutputErr
	if err := slog.End(scriptlog.Outcome{ExitCode: res.ExitCode, Signal: res.Signal, Truncated: res.Truncated}, now); err != nil && logErr == nil {
		logErr = err
	}
	return end, logErr
}

// logEnd writes the script's end to executor.log. SPEC §6: a successful script's end is
// "script completed", the text monitoring filters written for PCS nodes look for; any other
// end (failed, interrupted) is "script ended", and a failure is followed by its onError line.
func logEnd(log *zap.Logger, end *state.ScriptRun) {
	fields := []zap.Field{zap.Int64("duration_ms", end.DurationMS)}
	if end.ExitCode != nil {
		fields = append(fields, zap.Int("exit_code", *end.ExitCode))
	}
	if end.Signal != "" {
		fields = append(fields, zap.String("signal", end.Signal))
	}
	msg := "script completed"
	if end.Status != state.ScriptSucceeded {
		msg = "script ended"
	}
	log.Info(msg, append(fields, zap.String("status", string(end.Status)))...)
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

var timeZero = time.Time{}
