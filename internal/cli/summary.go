package cli

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// stageSummary prints the one line every stage run ends with on stderr (the observed "exit 3
// for stage nodeBootstrapped", with how long and what its scripts did) and logs it at INFO in
// executor.log ("stage summary"; INFO: the console logger, WARN and above, must not print it
// a second time).
func stageSummary(w io.Writer, s *boot.Session, out stage.Outcome, took time.Duration) {
	var ran, failed, skipped, notRun, dlFailed, interrupted int
	if b := s.Store.State.Boot(s.Node.BootID); b != nil {
		if sr := b.Stages[out.Stage]; sr != nil {
			for _, r := range sr.Scripts {
				switch r.Status {
				case state.ScriptSucceeded:
					ran++
				case state.ScriptFailed:
					ran++
					failed++
				case state.ScriptSkipped:
					skipped++
				case state.ScriptNotRun:
					notRun++
				case state.ScriptDownloadFailed:
					dlFailed++
				case state.ScriptInterrupted:
					interrupted++
				}
			}
		}
	}
	line := fmt.Sprintf("exit %d for stage %s", out.ExitCode, out.Stage)
	switch {
	case out.Status == state.StageRefused && s.Store.State.Terminated != nil:
		line += ": nothing run, " + stage.TerminatedText(s.Store.State.Terminated) + "; --force overrides"
	case out.AlreadyRan:
		line += fmt.Sprintf(": nothing run, it already ran this boot (%s); --force runs it again", out.Status)
	default:
		line += fmt.Sprintf(" after %s: %d ran (%d failed), %d skipped", nodestatus.Duration(took), ran, failed, skipped)
		if dlFailed > 0 {
			line += fmt.Sprintf(", %d download failed", dlFailed)
		}
		if notRun > 0 {
			line += fmt.Sprintf(", %d not run", notRun)
		}
		if interrupted > 0 {
			line += fmt.Sprintf(", %d interrupted", interrupted)
		}
	}
	fmt.Fprintln(w, "pcs-lifecycle: "+line)
	s.Log.Info("stage summary", zap.String("stage", out.Stage), zap.Int("exit_code", out.ExitCode), zap.Int("ran", ran),
		zap.Int("failed", failed), zap.Int("skipped", skipped), zap.Int("not_run", notRun), zap.Int("download_failed", dlFailed),
		zap.Bool("already_ran", out.AlreadyRan), zap.Int64("duration_ms", took.Milliseconds()))
}
