package evidence

import "time"

// SchemaVersion is the version of the summary document. The schema is stable: fields are only
// ever added (docs/evidence.md; Athena reads the summaries as a table).
const SchemaVersion = 1

// Summary is `<boot-id>.json`, written beside each bundle: one JSON object on one line, so
// that a query engine over S3 (Amazon Athena with the OpenX JSON SerDe) reads a prefix of
// them as a table, and `pcs-lifecycle report` summarises a fleet without opening a bundle.
type Summary struct {
	SchemaVersion      int    `json:"schema_version"`
	ClusterID          string `json:"cluster_id"`
	ComputeNodeGroupID string `json:"compute_node_group_id"`
	InstanceID         string `json:"instance_id"`
	BootID             string `json:"boot_id"`
	NodeID             string `json:"node_id,omitempty"`
	FirstBoot          bool   `json:"first_boot"`
	// UploadedAt is when the bundle was made (UTC, RFC 3339).
	UploadedAt time.Time `json:"uploaded_at"`
	// Trigger is why it was made: terminate, failure or always (--evidence-on); Stage is the
	// stage whose end triggered it.
	Trigger string `json:"trigger"`
	Stage   string `json:"stage"`
	// ExitCode is the boot's result as status reports it; InstanceFailed: a TERMINATE marked
	// the instance failed.
	ExitCode       int    `json:"exit_code"`
	InstanceFailed bool   `json:"instance_failed"`
	Version        string `json:"version"`
	// BundleKey is the S3 key of the tarball beside this summary.
	BundleKey string         `json:"bundle_key"`
	Stages    []StageSummary `json:"stages"`
	Scripts   []ScriptSum    `json:"scripts"`
}

// StageSummary is one stage of the boot.
type StageSummary struct {
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
}

// ScriptSum is one script of the boot: its state on this boot (status's vocabulary) and its
// last execution.
type ScriptSum struct {
	Stage           string     `json:"stage"`
	Name            string     `json:"name"`
	State           string     `json:"state"`
	OnError         string     `json:"on_error,omitempty"`
	ExecutionPolicy string     `json:"execution_policy,omitempty"`
	ExitCode        *int       `json:"exit_code,omitempty"`
	Signal          string     `json:"signal,omitempty"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	DurationMS      *int64     `json:"duration_ms,omitempty"`
	Runs            int        `json:"runs"`
	Failures        int        `json:"failures"`
	Error           string     `json:"error,omitempty"`
	// LastLogLine is the last line the script printed in its last run (redacted), for a
	// failure at a glance.
	LastLogLine string `json:"last_log_line,omitempty"`
}

// Failed reports whether the script failed on this boot.
func (s ScriptSum) Failed() bool { return s.State == "failed" || s.State == "download_failed" }
