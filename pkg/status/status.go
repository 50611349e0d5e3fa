// Package status is the `pcs-lifecycle status --json` document: a contract for monitoring
// tools. It imports the standard library only. Fields are only ever added, never renamed.
package status

import "time"

// Version of this document's format.
const Version = 1

// Document is the whole status of a node.
type Document struct {
	Version int  `json:"version"`
	Node    Node `json:"node"`
	// ExitCode is the worst result of the current boot (0, 3 or 4; a stage running or
	// interrupted counts as 3), the same code `status` exits with.
	ExitCode   int          `json:"exit_code"`
	Running    bool         `json:"running"`          // an executor holds the lock now
	Holder     string       `json:"holder,omitempty"` // which one
	Terminated *Termination `json:"terminated,omitempty"`
	Stages     []Stage      `json:"stages"`
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
}

// Termination is the TERMINATE that marked the instance failed.
type Termination struct {
	Stage    string    `json:"stage"`
	Script   string    `json:"script"`
	ExitCode int       `json:"exit_code"`
	BootID   string    `json:"boot_id"`
	At       time.Time `json:"at"`
}

// Stage is one stage on the current boot.
type Stage struct {
	Name       string     `json:"name"`
	Status     string     `json:"status"` // not_started, running, succeeded, failed, terminated, interrupted, refused
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
	Reason   string `json:"reason,omitempty"`
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
