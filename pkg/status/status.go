// Package status is the `pcs-lifecycle status --json` document: a contract for monitoring
// tools. It imports the standard library only. Fields are only ever added, never renamed.
package status

import "time"

// Version of this document's format.
const Version = 1

// Script states: the one vocabulary that status, status --json (Script.State), plan and the
// metrics use for a script on a boot (docs/states.md).
const (
	// ScriptPending: not reached yet on this boot; it will run when its stage runs.
	ScriptPending = "pending"
	// ScriptRunning: running now.
	ScriptRunning = "running"
	// ScriptSucceeded: ran on this boot and exited 0.
	ScriptSucceeded = "succeeded"
	// ScriptFailed: ran on this boot and exited non-zero, was killed or timed out.
	ScriptFailed = "failed"
	// ScriptDownloadFailed: could not be downloaded or verified on this boot; it did not run.
	ScriptDownloadFailed = "download_failed"
	// ScriptInterrupted: the executor was stopped while it ran; the next run of its stage in
	// this boot runs it again.
	ScriptInterrupted = "interrupted"
	// ScriptSkipped: does not run on this boot, by its executionPolicy (FIRST_BOOT_ONLY on a
	// later boot) or because it already ran in this boot.
	ScriptSkipped = "skipped"
	// ScriptNotRun: its stage stopped before it (STOP_SEQUENCE, TERMINATE, stage timeout).
	ScriptNotRun = "not_run"
	// ScriptRefused: the instance was marked failed by a TERMINATE; a run of its stage is
	// refused (exit 4) unless --force.
	ScriptRefused = "refused"
)

// ScriptStates lists every script state, in the order above.
var ScriptStates = []string{ScriptPending, ScriptRunning, ScriptSucceeded, ScriptFailed, ScriptDownloadFailed,
	ScriptInterrupted, ScriptSkipped, ScriptNotRun, ScriptRefused}

// Stage states (Stage.Status).
const (
	StageNotStarted  = "not_started" // no run of the stage on this boot yet
	StageRunning     = "running"
	StageSucceeded   = "succeeded"   // every script succeeded or was skipped
	StageFailed      = "failed"      // a script failed under CONTINUE or STOP_SEQUENCE (exit 3)
	StageTerminated  = "terminated"  // a script failed under TERMINATE (exit 4)
	StageInterrupted = "interrupted" // the executor was stopped or died during it (exit 3)
	StageRefused     = "refused"     // the instance was marked failed: nothing runs (exit 4)
	// StageNotRegistered: nodeReady did not run, the node did not register with Slurm in time
	// (exit 1).
	StageNotRegistered = "not_registered"
)

// StageStates lists every stage state, in the order above.
var StageStates = []string{StageNotStarted, StageRunning, StageSucceeded, StageFailed, StageTerminated,
	StageInterrupted, StageRefused, StageNotRegistered}

// Document is the whole status of a node.
type Document struct {
	Version int  `json:"version"`
	Node    Node `json:"node"`
	// ExitCode is the worst result of the current boot (0, 3 or 4; a stage running or
	// interrupted counts as 3; 1 when nodeReady did not run because the node did not register;
	// 5 when nothing ran on this boot or no configuration is cached), the same code `status`
	// exits with.
	ExitCode int `json:"exit_code"`
	// Summary says the exit code in words ("nothing has run on this boot", …).
	Summary    string       `json:"summary,omitempty"`
	Running    bool         `json:"running"`          // an executor holds the lock now
	Holder     string       `json:"holder,omitempty"` // which one
	Terminated *Termination `json:"terminated,omitempty"`
	// Evidence is the last evidence bundle upload of this boot (--evidence-uri), if any.
	Evidence *Evidence `json:"evidence,omitempty"`
	Stages   []Stage   `json:"stages"`
}

// Evidence is an evidence bundle upload: where it went, or why it failed.
type Evidence struct {
	At         time.Time `json:"at"`
	Stage      string    `json:"stage"`
	OK         bool      `json:"ok"`
	URI        string    `json:"uri,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// Node identifies the node and boot.
type Node struct {
	NodeID      string `json:"node_id,omitempty"`
	InstanceID  string `json:"instance_id,omitempty"`
	BootID      string `json:"boot_id"`
	FirstBoot   bool   `json:"first_boot"`
	FirstBootID string `json:"first_boot_id,omitempty"`
	Boots       int    `json:"boots_seen"`
	Caching     string `json:"script_caching_policy,omitempty"`
	// ConfigCached: a configuration was cached on this instance (its first run got that far).
	ConfigCached bool `json:"config_cached"`
}

// Termination is the TERMINATE that marked the instance failed.
type Termination struct {
	Stage    string    `json:"stage"`
	Script   string    `json:"script"`
	ExitCode int       `json:"exit_code"`
	BootID   string    `json:"boot_id"`
	At       time.Time `json:"at"`
	Signal   string    `json:"signal,omitempty"`
	// Message says it in words: "the instance was marked failed at … by stage/script (exit N)".
	Message string `json:"message,omitempty"`
}

// Stage is one stage on the current boot.
type Stage struct {
	Name       string     `json:"name"`
	Status     string     `json:"status"` // one of StageStates
	ExitCode   *int       `json:"exit_code,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
	Scripts    []Script   `json:"scripts"`
}

// Script is one script: its policy, this boot's outcome and its last execution.
type Script struct {
	Name            string `json:"name"`
	Location        string `json:"location,omitempty"`
	ExecutionPolicy string `json:"execution_policy,omitempty"`
	OnError         string `json:"on_error,omitempty"`
	// ThisBoot is the outcome on the current boot: running, succeeded, failed,
	// download_failed, skipped, interrupted, not_run, or pending (not reached yet).
	ThisBoot string `json:"this_boot"`
	// State is the script's state on this boot in the one vocabulary (ScriptStates): this_boot
	// where something is recorded, else what a run of this boot does with it (pending,
	// skipped, refused). Reason says why.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// NeverRuns, when set, says why the script can no longer run on this instance although it
	// did not run on this boot (the instance was marked failed by a TERMINATE; a
	// FIRST_BOOT_ONLY script that did not run on the first boot).
	NeverRuns string `json:"never_runs,omitempty"`
	// LastResult and the fields after it describe the last execution on this instance.
	LastResult string     `json:"last_result,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Signal     string     `json:"signal,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
	Runs       int        `json:"runs"`
	Error      string     `json:"error,omitempty"`
	SHA256     string     `json:"sha256,omitempty"`
}
