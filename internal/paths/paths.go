// Package paths builds every filesystem path of the executor under the --root prefix. No other
// package joins a path under the root.
package paths

import (
	"path/filepath"
)

// Layout is the set of paths of one node (a --root sandbox or "/").
type Layout struct {
	Root string
}

// New returns the layout under root ("" or "/" means the real node).
func New(root string) Layout {
	if root == "" {
		root = "/"
	}
	return Layout{Root: filepath.Clean(root)}
}

func (l Layout) join(p string) string { return filepath.Join(l.Root, p) }

// ConfigDir is the cache root: /etc/amazon/pcs/lifecycle/actions/config.
func (l Layout) ConfigDir() string { return l.join("/etc/amazon/pcs/lifecycle/actions/config") }

// ScriptsDir holds cached scripts (0700).
func (l Layout) ScriptsDir() string { return filepath.Join(l.ConfigDir(), "scripts") }

// CachedScript is the cached copy of the script called name. Names are validated by the
// configuration (no "/", no leading "."), so the file stays inside ScriptsDir.
func (l Layout) CachedScript(name string) string { return filepath.Join(l.ScriptsDir(), name) }

// CachedConfig is the configuration cached at first boot.
func (l Layout) CachedConfig() string {
	return filepath.Join(l.ConfigDir(), "node-lifecycle-actions.json")
}

// StateDir holds state.json and the lock.
func (l Layout) StateDir() string { return l.join("/var/lib/amazon/pcs/lifecycle") }

// StateFile is state.json.
func (l Layout) StateFile() string { return filepath.Join(l.StateDir(), "state.json") }

// JournalFile is the append-only journal folded into state.json.
func (l Layout) JournalFile() string { return filepath.Join(l.StateDir(), "state.journal") }

// LockFile is the exclusive lock of writers.
func (l Layout) LockFile() string { return filepath.Join(l.StateDir(), "lock") }

// LogDir is /var/log/amazon/pcs/lifecycle/actions.
func (l Layout) LogDir() string { return l.join("/var/log/amazon/pcs/lifecycle/actions") }

// ExecutorLog is the JSON-lines executor log.
func (l Layout) ExecutorLog() string { return filepath.Join(l.LogDir(), "executor.log") }

// StageLogDir is the per-script log directory of one stage.
func (l Layout) StageLogDir(stage string) string { return filepath.Join(l.LogDir(), stage) }

// ScriptLog is the per-script log of one script (name as given, spaces kept).
func (l Layout) ScriptLog(stage, name string) string {
	return filepath.Join(l.StageLogDir(stage), name+".log")
}

// Console is where a TERMINATE summary is written (the machine's console; a plain file under
// a sandbox root).
func (l Layout) Console() string { return l.join("/dev/console") }

// MachineID is /etc/machine-id, the instance fallback when IMDS is unavailable.
func (l Layout) MachineID() string { return l.join("/etc/machine-id") }

// BootID is the kernel's boot id. It is read from the real /proc even under a sandbox root,
// since a sandbox has no kernel of its own.
func (l Layout) BootID() string { return "/proc/sys/kernel/random/boot_id" }
