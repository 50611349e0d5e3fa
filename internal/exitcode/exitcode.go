// Package exitcode is the one table of the executor's exit codes (SPEC §7).
package exitcode

const (
	// OK: every script succeeded or was skipped.
	OK = 0
	// Internal: the executor itself failed (lock, disk, state, internal error, registration timeout).
	Internal = 1
	// Usage: invalid configuration or command line.
	Usage = 2
	// Failed: a script failed under CONTINUE or STOP_SEQUENCE; the node carries on. Also a stage
	// interrupted or still running, as status reports it.
	Failed = 3
	// Terminate: a script failed under TERMINATE; the node must be replaced.
	Terminate = 4
	// NothingRan: status only: nothing has run on this boot, or no configuration was ever
	// cached on this instance (a node whose boot sequence never started looks unhealthy, not
	// fine).
	NothingRan = 5
	// Interrupted by SIGINT / SIGTERM (128 + signal number).
	SIGINT  = 130
	SIGTERM = 143
)

// Worst returns the more serious of two stage results (4 > 3 > 0).
func Worst(a, b int) int {
	rank := func(c int) int {
		switch c {
		case Terminate:
			return 3
		case Failed:
			return 2
		case OK:
			return 0
		}
		return 1
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
