// Package state is the node's lifecycle history: which instance and boots it has seen, each
// stage run of each boot and each script's runs. It lives in state.json (a versioned snapshot,
// replaced atomically: temp file, fsync, rename, fsync of the directory) plus state.journal
// (append-only JSON lines, one per script start and end, applied on load). The journal keeps
// the per-script cost to one append (start: no fsync, since a lost start only means "never
// started", which re-runs it anyway; end: fdatasync, so a finished script is never forgotten)
// while the snapshot is rewritten only at stage boundaries, where the journal is folded in.
// Writers hold an exclusive lock (see lock.go); readers such as status never take it.
package state

import (
	"time"
)

// Version is the snapshot format version.
const Version = 1

// MaxBoots bounds the boots kept in the snapshot (the oldest are dropped; per-script history
// keeps its own counters, and the first boot is always kept). The snapshot is read by every
// status, so it stays small: about 3.5 KB per boot of 20 scripts.
const MaxBoots = 5

// StageStatus is where a stage run stands.
type StageStatus string

const (
	StageRunning     StageStatus = "running"
	StageSucceeded   StageStatus = "succeeded"   // every script succeeded or was skipped
	StageFailed      StageStatus = "failed"      // a script failed under CONTINUE or STOP_SEQUENCE
	StageTerminated  StageStatus = "terminated"  // a script failed under TERMINATE
	StageInterrupted StageStatus = "interrupted" // the executor was stopped or died during it
	StageRefused     StageStatus = "refused"     // nothing ran: the instance was already terminated
	// StageNotRegistered: nodeReady did not run, the node never registered with Slurm in time
	// (the executor exited 1). Running the stage again in the boot tries again.
	StageNotRegistered StageStatus = "not_registered"
)

// Resumable reports whether running the stage again in the same boot carries it on (it was
// cut short or never got going) rather than returning its recorded result.
func (s StageStatus) Resumable() bool {
	return s == StageRunning || s == StageInterrupted || s == StageNotRegistered
}

// ScriptStatus is where one script run stands.
type ScriptStatus string

const (
	ScriptRunning        ScriptStatus = "running"
	ScriptSucceeded      ScriptStatus = "succeeded"
	ScriptFailed         ScriptStatus = "failed"
	ScriptDownloadFailed ScriptStatus = "download_failed"
	ScriptSkipped        ScriptStatus = "skipped"
	ScriptInterrupted    ScriptStatus = "interrupted"
	ScriptNotRun         ScriptStatus = "not_run" // after STOP_SEQUENCE or TERMINATE
)

// Ended reports whether a status is a finished execution (success or failure).
func (s ScriptStatus) Ended() bool { return s == ScriptSucceeded || s == ScriptFailed }

// State is the whole snapshot.
type State struct {
	Version     int                       `json:"version"`
	Seq         uint64                    `json:"seq"` // last journal event folded in
	InstanceID  string                    `json:"instance_id"`
	FirstBootID string                    `json:"first_boot_id"`
	CreatedAt   time.Time                 `json:"created_at"`
	ConfigSHA   string                    `json:"config_sha256,omitempty"`
	Terminated  *Termination              `json:"terminated,omitempty"`
	Boots       []*Boot                   `json:"boots"`
	Scripts     map[string]*ScriptHistory `json:"scripts"` // key: Key(stage, name)
}

// Termination records the TERMINATE that marked the instance failed.
type Termination struct {
	BootID   string    `json:"boot_id"`
	Stage    string    `json:"stage"`
	Script   string    `json:"script"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Boot is one boot of the instance.
type Boot struct {
	BootID     string               `json:"boot_id"`
	FirstBoot  bool                 `json:"first_boot"`
	StartedAt  time.Time            `json:"started_at"`
	Prefetched bool                 `json:"prefetched"`
	Stages     map[string]*StageRun `json:"stages"`
	// Marks are the boot's timed steps besides stages and scripts (marks.go).
	Marks []Mark `json:"marks,omitempty"`
	// Evidence is the last evidence bundle upload of this boot.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// StageRun is one stage's run in a boot.
type StageRun struct {
	Status    StageStatus  `json:"status"`
	ExitCode  int          `json:"exit_code"`
	StartedAt time.Time    `json:"started_at"`
	EndedAt   *time.Time   `json:"ended_at,omitempty"`
	PID       int          `json:"pid"`
	Forced    bool         `json:"forced,omitempty"`
	Scripts   []*ScriptRun `json:"scripts"`
}

// ScriptRun is one script's outcome in a stage run.
type ScriptRun struct {
	Name       string       `json:"name"`
	Status     ScriptStatus `json:"status"`
	Reason     string       `json:"reason,omitempty"`
	ExitCode   *int         `json:"exit_code,omitempty"`
	Signal     string       `json:"signal,omitempty"`
	TimedOut   bool         `json:"timed_out,omitempty"`
	PGID       int          `json:"pgid,omitempty"` // the script's process group while it runs
	StartedAt  *time.Time   `json:"started_at,omitempty"`
	DurationMS int64        `json:"duration_ms,omitempty"`
	Error      string       `json:"error,omitempty"`
}

// ScriptHistory is a script's history on this instance, across boots.
type ScriptHistory struct {
	Runs       int        `json:"runs"`               // executions started
	Failures   int        `json:"failures,omitempty"` // runs that failed, and download failures
	Ended      bool       `json:"ended"`              // an execution ended (success or failure) on this instance
	Pending    bool       `json:"pending"`            // the last execution started and never ended
	Last       *ScriptRun `json:"last,omitempty"`
	LastBootID string     `json:"last_boot_id,omitempty"`
	// Cache: the digest recorded at download and the boot it was downloaded in.
	Digest      string     `json:"sha256,omitempty"`
	Location    string     `json:"location,omitempty"`
	FetchedBoot string     `json:"fetched_boot_id,omitempty"`
	FetchedAt   *time.Time `json:"fetched_at,omitempty"`
}

// Key is the history key of a script.
func Key(stage, name string) string { return stage + "/" + name }

// New returns the state of an instance seen for the first time, in bootID.
func New(instanceID, bootID string, now time.Time) *State {
	return &State{Version: Version, InstanceID: instanceID, FirstBootID: bootID, CreatedAt: now.UTC(),
		Scripts: map[string]*ScriptHistory{}}
}

// Boot returns the boot record of bootID, or nil.
func (s *State) Boot(bootID string) *Boot {
	for _, b := range s.Boots {
		if b.BootID == bootID {
			return b
		}
	}
	return nil
}

// EnsureBoot returns the boot record of bootID, adding it if new (oldest dropped past MaxBoots).
func (s *State) EnsureBoot(bootID string, now time.Time) *Boot {
	if b := s.Boot(bootID); b != nil {
		return b
	}
	b := &Boot{BootID: bootID, FirstBoot: bootID == s.FirstBootID, StartedAt: now.UTC(), Stages: map[string]*StageRun{}}
	s.Boots = append(s.Boots, b)
	if len(s.Boots) > MaxBoots {
		// Drop the oldest but the first boot: whether its stages ended decides what
		// FIRST_BOOT_ONLY scripts are still owed, on every later boot.
		kept := make([]*Boot, 0, MaxBoots)
		drop := len(s.Boots) - MaxBoots
		for _, old := range s.Boots {
			if drop > 0 && old.BootID != s.FirstBootID {
				drop--
				continue
			}
			kept = append(kept, old)
		}
		s.Boots = kept
	}
	return b
}

// History returns the history of a script, creating it.
func (s *State) History(stage, name string) *ScriptHistory {
	if s.Scripts == nil {
		s.Scripts = map[string]*ScriptHistory{}
	}
	k := Key(stage, name)
	h := s.Scripts[k]
	if h == nil {
		h = &ScriptHistory{}
		s.Scripts[k] = h
	}
	return h
}

// FirstBootStage returns the stage run of the instance's first boot, or nil.
func (s *State) FirstBootStage(stage string) *StageRun {
	if b := s.Boot(s.FirstBootID); b != nil {
		return b.Stages[stage]
	}
	return nil
}

// Script returns the run of name in the stage run, or nil.
func (r *StageRun) Script(name string) *ScriptRun {
	if r == nil {
		return nil
	}
	for _, sr := range r.Scripts {
		if sr.Name == name {
			return sr
		}
	}
	return nil
}

// Upsert records run in the stage run (replacing the script's earlier entry).
func (r *StageRun) Upsert(run *ScriptRun) {
	for i, sr := range r.Scripts {
		if sr.Name == run.Name {
			r.Scripts[i] = run
			return
		}
	}
	r.Scripts = append(r.Scripts, run)
}

// Event is one journal line: a script run recorded in a boot's stage, with its cache record.
type Event struct {
	Seq    uint64     `json:"seq"`
	BootID string     `json:"boot_id"`
	Stage  string     `json:"stage"`
	Run    *ScriptRun `json:"run"`
	Cache  *CacheRec  `json:"cache,omitempty"`
}

// CacheRec is a download recorded with an event.
type CacheRec struct {
	Digest   string    `json:"sha256"`
	Location string    `json:"location"`
	At       time.Time `json:"at"`
}

// Apply folds an event into the state.
func (s *State) Apply(e *Event) {
	if e.Seq > s.Seq {
		s.Seq = e.Seq
	}
	h := s.History(e.Stage, e.Run.Name)
	if e.Cache != nil {
		at := e.Cache.At
		h.Digest, h.Location, h.FetchedBoot, h.FetchedAt = e.Cache.Digest, e.Cache.Location, e.BootID, &at
	}
	b := s.Boot(e.BootID)
	if b == nil {
		b = s.EnsureBoot(e.BootID, e.Run.startedOr(time.Now()))
	}
	sr := b.Stages[e.Stage]
	if sr == nil {
		sr = &StageRun{Status: StageRunning, StartedAt: e.Run.startedOr(time.Now())}
		b.Stages[e.Stage] = sr
	}
	run := *e.Run
	if old := sr.Script(run.Name); old != nil && old.Status.Ended() && (run.Status == ScriptSkipped || run.Status == ScriptNotRun) {
		// A script that ended in this stage run stays ended in it: a stage resumed after an
		// interruption records its scripts that finished before as skipped ("already ran
		// this boot"), and replacing the end by that skip would make a second resumption run
		// them again. (--force starts a new stage run, so nothing else follows an end.)
		return
	}
	old := sr.Script(run.Name)
	sr.Upsert(&run)
	switch {
	case run.Status == ScriptRunning:
		// The same start recorded again with its process group is not another run.
		if old == nil || old.Status != ScriptRunning || !sameTime(old.StartedAt, run.StartedAt) {
			h.Runs++
		}
		h.Pending = true
		h.Last, h.LastBootID = &run, e.BootID
	case run.Status.Ended():
		h.Pending = false
		h.Ended = true
		h.Last, h.LastBootID = &run, e.BootID
		if run.Status == ScriptFailed {
			h.Failures++
		}
	case run.Status == ScriptInterrupted:
		h.Last, h.LastBootID = &run, e.BootID
	case run.Status == ScriptDownloadFailed:
		h.Last, h.LastBootID = &run, e.BootID
		h.Failures++
	}
}

func sameTime(a, b *time.Time) bool {
	return a != nil && b != nil && a.Equal(*b)
}

func (r *ScriptRun) startedOr(t time.Time) time.Time {
	if r.StartedAt != nil {
		return *r.StartedAt
	}
	return t.UTC()
}
