package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// The made-up identity of a try's sandbox node; identity flags and PCS_* variables override it.
const (
	tryInstanceID = "i-0000000000000try0"
	tryNodeID     = "try-node-1"
	tryClusterID  = "pcs_try0000000"
	tryCluster    = "try-cluster"
	tryCNGID      = "pcs_trycng00000"
	tryCNG        = "try-group"
)

// maxTryBoots bounds --boots: enough to see every policy, small enough to read.
const maxTryBoots = 20

// localDownloader is the stage runner's script source for try: a folder, not the network.
type localDownloader struct {
	dir source.LocalDir
	mu  sync.Mutex
	// read maps a location to the file read for it during the current boot.
	read map[string]string
}

func (d *localDownloader) Download(ctx context.Context, src lifecycle.ScriptSource, _ bool) ([]byte, error) {
	res, path, err := d.dir.FetchPath(ctx, src)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.read[src.ScriptLocation] = "FAILED: " + err.Error()
		return nil, err
	}
	d.read[src.ScriptLocation] = path
	return res.Data, nil
}

func newTryCmd(o *Options) *cobra.Command {
	var dir, only string
	var boots int
	var keep bool
	cmd := &cobra.Command{
		Use:   "try CONFIG --scripts-from DIR [--stage S] [--boots N]",
		Short: "Run a configuration on a throwaway sandbox node, its scripts taken from a local folder",
		Long: `Run the configuration document, unchanged, on a throwaway sandbox node: a temporary --root
and a made-up identity (the identity flags override it). Each script is taken from DIR instead
of being downloaded: by its location's path after the bucket or host (s3://bucket/lifecycle/a.sh
is DIR/lifecycle/a.sh), else by its file name (DIR/a.sh). Checksums are still checked, so the
same file can then go to PCS as it is. nodeReady runs at once: nothing waits for Slurm.

Each boot prints every script's log and the status table; --boots N replays N boots of the
same instance, so FIRST_BOOT_ONLY, EVERY_BOOT and the cache can be seen.

THE SCRIPTS RUN ON THIS MACHINE, as the user running try (as root when run as root, as on a
node). Only the executor's own files (state, cache, logs) go under the sandbox.

Exit codes: 0 every script succeeded or was skipped, 3 a script failed under CONTINUE or
STOP_SEQUENCE, 4 a script failed under TERMINATE, 2 invalid configuration or usage, 1 the
executor itself failed.`,
		Example: `  pcs-lifecycle try node-lifecycle-actions.json --scripts-from ./scripts
  pcs-lifecycle try node-lifecycle-actions.json --scripts-from ./scripts --boots 3
  pcs-lifecycle try node-lifecycle-actions.json --scripts-from ./scripts --stage nodeReady --keep`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return exitf(exitcode.Usage, "--scripts-from DIR is required: the folder the scripts are taken from")
			}
			if cmd.Flags().Changed("root") {
				return exitf(exitcode.Usage, "--root: try makes a sandbox of its own each time; --keep keeps it (and says where)")
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return exitf(exitcode.Usage, "--scripts-from %s: not a folder", dir)
			}
			if boots < 1 || boots > maxTryBoots {
				return exitf(exitcode.Usage, "--boots %d: must be 1 to %d", boots, maxTryBoots)
			}
			stages := lifecycle.Stages
			if only != "" {
				if err := checkStage(only); err != nil {
					return err
				}
				stages = []string{only}
			}
			if err := o.validateCommon(); err != nil {
				return err
			}
			t := &tryRun{o: o, cmd: cmd, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), stages: stages, boots: boots, keep: keep}
			t.dl = &localDownloader{dir: source.LocalDir{Dir: dir}}
			return t.run(cmd, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "scripts-from", "", "folder the scripts are taken from, by their location's path or file name")
	f.StringVar(&only, "stage", "", "run only this stage (nodeBootstrapped or nodeReady); default both, in boot order")
	f.IntVar(&boots, "boots", 1, "how many boots of the same instance to replay (1 to 20)")
	f.BoolVar(&keep, "keep", false, "keep the sandbox folder (its state, cache and logs) and print where it is")
	return cmd
}

type tryRun struct {
	o         *Options
	cmd       *cobra.Command
	out, errw io.Writer
	stages    []string
	boots     int
	keep      bool
	dl        *localDownloader
}

func (t *tryRun) run(cmd *cobra.Command, loc string) error {
	ctx := cmd.Context()
	name := sourceName(loc)
	f := source.New(source.Config{Attempts: t.o.DownloadAttempts, Backoff: t.o.DownloadBackoff, ExpectedBucketOwner: t.o.ExpectedBucketOwner})
	data, err := readConfigSource(ctx, f, loc, cmd.InOrStdin())
	if err != nil {
		return exitf(exitcode.Usage, "%s: %w", name, err)
	}
	d, err := lifecycle.Decode(data, lifecycle.Options{})
	if err != nil {
		// The same listing as validate: the document must be valid before anything runs.
		return printValidation(cmd, name, data, lifecycle.Options{})
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(t.out, "warning: %s\n", w)
	}

	sandbox, err := os.MkdirTemp("", "pcs-lifecycle-try-")
	if err != nil {
		return exitf(exitcode.Internal, "sandbox: %w", err)
	}
	if t.keep {
		defer fmt.Fprintf(t.errw, "pcs-lifecycle try: the sandbox is kept at %s (status: pcs-lifecycle status --root %s)\n", sandbox, filepath.Join(sandbox, "root"))
	} else {
		defer os.RemoveAll(sandbox)
	}
	cfg := filepath.Join(sandbox, "node-lifecycle-actions.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		return exitf(exitcode.Internal, "sandbox: %w", err)
	}
	node := *t.o
	node.Root, node.Config = filepath.Join(sandbox, "root"), cfg
	if err := os.MkdirAll(node.Root, 0o755); err != nil {
		return exitf(exitcode.Internal, "sandbox: %w", err)
	}
	setDefault(&node.InstanceID, tryInstanceID)
	setDefault(&node.NodeID, tryNodeID)
	setDefault(&node.ClusterID, tryClusterID)
	setDefault(&node.ClusterName, tryCluster)
	setDefault(&node.CNGID, tryCNGID)
	setDefault(&node.CNGName, tryCNG)

	fmt.Fprintf(t.errw, "pcs-lifecycle try: %s, %s\n", name, d.Form.Describe())
	fmt.Fprintf(t.errw, "pcs-lifecycle try: sandbox node %s (instance %s, node %s); scripts from %s, checksums checked\n",
		node.Root, node.InstanceID, node.NodeID, t.dl.dir.Dir)
	fmt.Fprintf(t.errw, "pcs-lifecycle try: THE SCRIPTS RUN ON THIS MACHINE AS %s, not in a container: only the executor's files are sandboxed\n", whoAmI())

	worst := exitcode.OK
	base := t.o.BootID
	if base == "" {
		base = "try-boot"
	}
	for b := 1; b <= t.boots; b++ {
		node.BootID = base + "-" + strconv.Itoa(b)
		code, stop, err := t.boot(ctx, &node, d.Document, b)
		if err != nil {
			return err
		}
		worst = exitcode.Worst(worst, code)
		if stop != "" {
			fmt.Fprintf(t.out, "\n%s", stop)
			if b < t.boots {
				fmt.Fprintf(t.out, "; boots %d to %d not replayed", b+1, t.boots)
			}
			fmt.Fprintln(t.out)
			break
		}
	}
	if worst != exitcode.OK {
		return &ExitError{Code: worst}
	}
	return nil
}

func setDefault(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

func whoAmI() string {
	uid := os.Getuid()
	who := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		who = u.Username + " (" + who + ")"
	}
	if uid == 0 {
		return who + ", as on a node"
	}
	return who + " (on a node they run as root)"
}

// boot replays one boot of the sandbox node through the real stage runner and prints what it
// did. stop is why no further boot is replayed ("" to go on).
func (t *tryRun) boot(ctx context.Context, node *Options, doc *lifecycle.Document, n int) (code int, stop string, err error) {
	s, err := openSession(ctx, t.cmd, node, "try")
	if err != nil {
		return 0, "", err
	}
	closed := false
	defer func() {
		if !closed {
			err = closeSession(s, err)
		}
	}()
	if err := s.LoadConfig(ctx); err != nil {
		return 0, "", err
	}
	first := s.Store.State.FirstBootID == node.BootID
	kind := "a reboot: PCS_IS_FIRST_BOOT=0"
	if first {
		kind = "the instance's first boot: PCS_IS_FIRST_BOOT=1"
	}
	fmt.Fprintf(t.out, "\n=== boot %d of %d (%s, %s)\n", n, t.boots, node.BootID, kind)

	offsets := t.logOffsets(s, doc)
	t.dl.read = map[string]string{}
	r := s.Runner(false)
	r.Downloader = t.dl
	r.StageTimeout = boot.StageTimeouts(lifecycle.StageNodeBootstrapped, nil)
	code = exitcode.OK
	for _, st := range t.stages {
		out, err := r.RunStage(ctx, st) // nodeReady at once: a sandbox has no Slurm to wait for
		if err != nil {
			return 0, "", exitf(exitcode.Internal, "%s: %w", st, err)
		}
		if out.Interrupted {
			return 0, "", exitf(interruptCode(ctx), "%s interrupted (%s)", st, causeOf(ctx))
		}
		code = exitcode.Worst(code, out.ExitCode)
	}

	t.printReads()
	for _, st := range t.stages {
		for _, sc := range doc.Scripts(st) {
			t.printLog(s.Layout.ScriptLog(st, sc.Name), st+"/"+sc.Name, offsets[st+"/"+sc.Name])
		}
	}
	terminated := s.Store.State.Terminated
	// status reads the node as a reader would, with no executor holding it
	closed = true
	if err := closeSession(s, nil); err != nil {
		return 0, "", err
	}
	fmt.Fprintln(t.out, "--- status")
	status := newStatusCmd(node)
	status.SetArgs([]string{})
	status.SilenceUsage, status.SilenceErrors = true, true
	status.SetOut(t.out)
	status.SetErr(t.errw)
	if err := status.ExecuteContext(ctx); err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Msg != "" {
			fmt.Fprintf(t.errw, "pcs-lifecycle try: status: %v\n", err)
		}
	}
	if st := terminated; st != nil {
		return code, fmt.Sprintf("a TERMINATE (%s/%s) marks the instance failed: a real node would be replaced now", st.Stage, st.Script), nil
	}
	return code, "", nil
}

// logOffsets is where each script's log stood before this boot, to print only what this
// boot wrote.
func (t *tryRun) logOffsets(s *boot.Session, doc *lifecycle.Document) map[string]int64 {
	offsets := map[string]int64{}
	for _, st := range t.stages {
		for _, sc := range doc.Scripts(st) {
			if fi, err := os.Stat(s.Layout.ScriptLog(st, sc.Name)); err == nil {
				offsets[st+"/"+sc.Name] = fi.Size()
			}
		}
	}
	return offsets
}

// printReads prints which file of the folder each location was read from this boot.
func (t *tryRun) printReads() {
	var reads []string
	for loc, p := range t.dl.read {
		reads = append(reads, fmt.Sprintf("%s  <-  %s", loc, p))
	}
	sort.Strings(reads)
	for _, l := range reads {
		fmt.Fprintf(t.out, "script %s\n", l)
	}
	if len(reads) == 0 {
		fmt.Fprintln(t.out, "no script read from the folder this boot (cached copies, or nothing to run)")
	}
}

// printLog prints what this boot appended to a script's log.
func (t *tryRun) printLog(path, what string, from int64) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(t.out, "--- %s: did not run this boot\n", what)
		return
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		fmt.Fprintf(t.out, "--- %s: %v\n", what, err)
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil || len(data) == 0 {
		fmt.Fprintf(t.out, "--- %s: did not run this boot\n", what)
		return
	}
	fmt.Fprintf(t.out, "--- %s (%s)\n", what, path)
	_, _ = t.out.Write(data)
	if !strings.HasSuffix(string(data), "\n") {
		fmt.Fprintln(t.out)
	}
	if fi, err := f.Stat(); err == nil && fi.Size()-from > 64<<10 {
		fmt.Fprintf(t.out, "[… %d more bytes in the log]\n", fi.Size()-from-64<<10)
	}
}
