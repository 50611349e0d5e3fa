package state

import "time"

// Mark kinds: the steps of a boot that are not a stage or a script, recorded for the boot
// timeline (status --timeline) and the metrics.
const (
	MarkExecutorStarted  = "executor_started"  // a run or daemon started (Detail: the command)
	MarkDownloads        = "downloads"         // the concurrent prefetch (Detail: scripts, failures)
	MarkReady            = "ready"             // READY=1 sent to systemd (daemon)
	MarkRegistrationWait = "registration_wait" // nodeReady waited for the Slurm registration (Detail: how it ended)
	MarkEvidence         = "evidence_upload"   // an evidence bundle upload (Detail: result)
)

// MaxMarks bounds the marks kept per boot (the oldest are dropped): a node whose stage is run
// again and again in one boot keeps a bounded state.
const MaxMarks = 64

// Mark is one timed step of a boot.
type Mark struct {
	Kind       string    `json:"kind"`
	Stage      string    `json:"stage,omitempty"`
	At         time.Time `json:"at"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Detail     string    `json:"detail,omitempty"`
}

// Evidence is the outcome of the last evidence bundle upload of a boot.
type Evidence struct {
	At         time.Time `json:"at"`
	Stage      string    `json:"stage"`
	OK         bool      `json:"ok"`
	URI        string    `json:"uri,omitempty"` // the bundle's s3:// location
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// AddMark records a step of the boot (kept in memory until the next Save).
func (b *Boot) AddMark(m Mark) {
	m.At = m.At.UTC()
	b.Marks = append(b.Marks, m)
	if len(b.Marks) > MaxMarks {
		b.Marks = append([]Mark(nil), b.Marks[len(b.Marks)-MaxMarks:]...)
	}
}

// LastMark returns the boot's last mark of kind (for stage, when not ""), or nil.
func (b *Boot) LastMark(kind, stage string) *Mark {
	for i := len(b.Marks) - 1; i >= 0; i-- {
		if m := &b.Marks[i]; m.Kind == kind && (stage == "" || m.Stage == stage) {
			return m
		}
	}
	return nil
}
