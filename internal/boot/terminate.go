package boot

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/proc"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/programs"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// terminateFailure is the failure under TERMINATE in out, or nil.
func terminateFailure(out stage.Outcome) *stage.Failure {
	var fail *stage.Failure
	for i := range out.Failures {
		if out.Failures[i].OnError == lifecycle.Terminate {
			fail = &out.Failures[i]
		}
	}
	return fail
}

// writeTerminateSummary writes the TERMINATE summary to Stderr (the journal) and the console.
// It comes before the observers hear of the stage's end (finish), so the stage's summary line
// printed by the command line is the run's last; the action comes after them (terminate).
func (b *Boot) writeTerminateSummary(out stage.Outcome) {
	fail := terminateFailure(out)
	if fail == nil || out.AlreadyRan {
		return
	}
	summary := b.terminateSummary(*fail)
	fmt.Fprint(b.Stderr, summary)
	// The console: the one given, else /dev/console on a real node. A sandbox (--root) has no
	// console of its own: there the journal (stderr) and executor.log get the summary, and no
	// warning says a console was missing.
	console := b.Console
	if console == "" && b.Layout.Root == "/" {
		console = b.Layout.Console()
	}
	where := "the journal (stderr)"
	if console != "" {
		if err := appendConsole(console, summary); err != nil {
			b.Log.Warn("could not write the TERMINATE summary to the console", zap.String("console", console), zap.Error(err))
		} else {
			where += " and " + console
		}
	}
	b.Log.Error("TERMINATE: the node must be replaced; summary written to "+where, zap.String("stage", fail.Stage),
		zap.String("script", fail.Script), zap.String("on_terminate", b.OnTerminate))
}

// terminate takes the --on-terminate action after a TERMINATE (its summary was written when
// the stage ended: writeTerminateSummary).
func (b *Boot) terminate(ctx context.Context, out stage.Outcome) {
	if terminateFailure(out) == nil {
		return
	}
	argv := terminateArgv(b.OnTerminate)
	if argv == nil {
		return
	}
	// Not cancelled by the signal that may be stopping the executor: the action is the last
	// word on a node that must be replaced.
	outb, err := b.Commands.Run(context.WithoutCancel(ctx), argv)
	if err != nil {
		b.Log.Error("on-terminate action failed", zap.Strings("command", argv),
			zap.String("output", strings.TrimSpace(string(outb))), zap.Error(err))
		return
	}
	b.Log.Info("on-terminate action done", zap.Strings("command", argv))
}

// terminateSummary is the failure, its error and the last 20 lines of its log.
func (b *Boot) terminateSummary(fail stage.Failure) string {
	var s strings.Builder
	fmt.Fprintf(&s, "pcs-lifecycle: TERMINATE: %s\n", strings.TrimPrefix(FailureText(fail), "pcs-lifecycle: "))
	if fail.Err != "" {
		fmt.Fprintf(&s, "pcs-lifecycle: %s\n", fail.Err)
	}
	for _, l := range lastLines(b.Layout.ScriptLog(fail.Stage, fail.Script), 20) {
		fmt.Fprintf(&s, "pcs-lifecycle: | %s\n", l)
	}
	fmt.Fprintf(&s, "pcs-lifecycle: the node must be replaced (--on-terminate %s)\n", b.OnTerminate)
	return s.String()
}

// terminateArgv is the program --on-terminate runs: nil for exit.
func terminateArgv(action string) []string {
	switch {
	case action == "poweroff":
		return []string{programs.Systemctl, "poweroff"}
	case strings.HasPrefix(action, "command:"):
		return []string{programs.Shell, "-c", strings.TrimPrefix(action, "command:")}
	}
	return nil
}

// CheckOnTerminate validates --on-terminate.
func CheckOnTerminate(action string) error {
	switch {
	case action == "exit", action == "poweroff":
	case strings.HasPrefix(action, "command:") && len(action) > len("command:"):
	default:
		return fmt.Errorf("--on-terminate %q: must be exit, poweroff or command:<command>", action)
	}
	return nil
}

func appendConsole(path, text string) error {
	c, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, werr := c.WriteString(text)
	if cerr := c.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func lastLines(path string, n int) []string {
	data, err := fsutil.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines
}

// ProcCommands runs programs through internal/proc with the scripts' fixed environment,
// each bounded to two minutes.
type ProcCommands struct{}

// Run runs argv; a program that cannot start, fails or times out is an error.
func (ProcCommands) Run(ctx context.Context, argv []string) ([]byte, error) {
	path, err := programs.Look(argv[0], programs.ScriptPATH)
	if err != nil {
		return nil, err
	}
	out, res, err := proc.Output(ctx, proc.Spec{Path: path, Args: argv[1:], Env: stage.BaseEnv, Dir: "/", Timeout: 2 * time.Minute})
	if err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	if res.Failed() {
		return out, fmt.Errorf("%s: exit %d%s", path, res.ExitCode, signalText(res.Signal))
	}
	return out, nil
}

func signalText(sig string) string {
	if sig == "" {
		return ""
	}
	return " signal:" + sig
}
