package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SlurmInstall is the command that installs what StartSlurm needs (Debian's packages).
const SlurmInstall = "apt-get install -y slurmd slurmctld munge"

// slurmMarker is an environment variable every daemon (and through sbatch every job) of one
// test cluster carries, with the cluster's directory as value; cleanup kills every process
// that carries it, so that no slurmstepd or job outlives its test.
const slurmMarker = "PCS_TESTENV_SLURM"

// slurmPoll is how often startup conditions are checked.
const slurmPoll = 100 * time.Millisecond

// SlurmOptions shape the test cluster.
type SlurmOptions struct {
	// Nodes are the names of the compute nodes declared in slurm.conf (State=UNKNOWN, CPUs=1,
	// each with its own slurmd port). Default: {"node1"}. No slurmd is started: StartSlurmd.
	Nodes []string
	// FutureNodes are declared with State=FUTURE (visible with `scontrol --future`).
	FutureNodes []string
	// Prolog, when set, is the absolute path of a Slurm Prolog run by slurmd before each job.
	Prolog string
	// PrologFlags is slurm.conf's PrologFlags (such as "Alloc"); "" leaves it out.
	PrologFlags string
	// Extra lines appended to slurm.conf before the node and partition lines.
	Extra []string
}

// Slurm is a running slurmctld with its own munged, on loopback, in a directory of its own.
// Everything it started is killed when the test ends.
type Slurm struct {
	Dir         string   // the cluster's directory (state, spool, logs, munge socket)
	Conf        string   // slurm.conf; pass it to Slurm commands as SLURM_CONF (Env)
	BinDir      string   // the directory of scontrol, sbatch and squeue
	Scontrol    string   // path of scontrol
	MungeSocket string   // munged's socket (AuthInfo=socket=...)
	Port        int      // SlurmctldPort (on every address, as slurmctld binds)
	Nodes       []string // the compute nodes declared (not the FUTURE ones)
	Partition   string   // the default partition, holding every node

	bins      slurmBins
	nodePorts map[string]int

	mu      sync.Mutex
	slurmds map[string]*slurmProc
	procs   []*slurmProc
}

type slurmBins struct {
	munged, slurmctld, slurmd, scontrol, sbatch, squeue string
}

type slurmProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// StartSlurm starts munged and slurmctld for one test and waits until `scontrol ping` reports
// the controller UP. It fails the test with the install command when a binary is missing.
func StartSlurm(t testing.TB, opts SlurmOptions) *Slurm {
	t.Helper()
	bins, err := findSlurmBins()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if len(opts.Nodes) == 0 {
		opts.Nodes = []string{"node1"}
	}
	// Unix socket paths are limited to 108 bytes, so the cluster lives in a short directory of
	// its own rather than under t.TempDir().
	dir, err := os.MkdirTemp("", "pcs-slurm-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// munged insists that every directory above its socket is searchable by all.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	s := &Slurm{
		Dir:       dir,
		Conf:      filepath.Join(dir, "slurm.conf"),
		BinDir:    filepath.Dir(bins.scontrol),
		Scontrol:  bins.scontrol,
		Nodes:     append([]string(nil), opts.Nodes...),
		Partition: "debug",
		bins:      bins,
		slurmds:   map[string]*slurmProc{},
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs(t)
		}
		s.killAll()
		_ = os.RemoveAll(dir)
	})
	if err := s.startMunge(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// A free port is found by listening and closing it; another process may take it in
	// between, so a controller that cannot start is tried again on new ports.
	var lastErr error
	for try := 0; try < 3; try++ {
		if lastErr = s.startController(opts, try); lastErr == nil {
			return s
		}
	}
	t.Fatalf("testenv: %v", lastErr)
	return nil
}

func findSlurmBins() (slurmBins, error) {
	var b slurmBins
	var missing []string
	for _, x := range []struct {
		name string
		dst  *string
	}{
		{"munged", &b.munged}, {"slurmctld", &b.slurmctld}, {"slurmd", &b.slurmd},
		{"scontrol", &b.scontrol}, {"sbatch", &b.sbatch}, {"squeue", &b.squeue},
	} {
		p, err := lookSlurmBin(x.name)
		if err != nil {
			missing = append(missing, x.name)
			continue
		}
		*x.dst = p
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("slurm/munge not installed (missing %s): install them with `%s`",
			strings.Join(missing, ", "), SlurmInstall)
	}
	return b, nil
}

func lookSlurmBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/opt/slurm/sbin", "/opt/slurm/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// slurmFreePorts returns n distinct TCP ports nothing listens on, on any address (slurmctld
// and slurmd bind the wildcard address): each is listened on until all are found, then
// released.
func slurmFreePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (s *Slurm) startMunge() error {
	mdir := filepath.Join(s.Dir, "munge")
	if err := os.Mkdir(mdir, 0o755); err != nil {
		return err
	}
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return err
	}
	_, err = f.Read(key)
	f.Close()
	if err != nil {
		return fmt.Errorf("munge key: %w", err)
	}
	keyFile := filepath.Join(mdir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		return err
	}
	s.MungeSocket = filepath.Join(mdir, "munge.sock")
	p, err := s.start("munged", filepath.Join(s.Dir, "munged.log"), s.bins.munged,
		"--foreground",
		"--socket="+s.MungeSocket,
		"--key-file="+keyFile,
		"--pid-file="+filepath.Join(mdir, "munged.pid"),
		"--log-file="+filepath.Join(mdir, "munged.file.log"),
		"--seed-file="+filepath.Join(mdir, "munged.seed"),
		"--num-threads=2",
		// Not the hostname, which need not resolve on a test machine.
		"--origin=127.0.0.1",
	)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(s.MungeSocket); err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("munged exited at start (%v); its output:\n%s", p.err, tailFile(p.log, 3000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("munged did not create %s within 10s; its output:\n%s", s.MungeSocket, tailFile(p.log, 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Slurm) startController(opts SlurmOptions, try int) error {
	nodes := append(append([]string(nil), opts.Nodes...), opts.FutureNodes...)
	// All at once, so that no two of them are the same port (one freed port can be handed
	// out again by the next listen).
	ports, err := slurmFreePorts(2 + len(nodes))
	if err != nil {
		return err
	}
	s.Port = ports[0]
	slurmdPort := ports[1]
	s.nodePorts = map[string]int{}
	for i, n := range nodes {
		s.nodePorts[n] = ports[2+i]
	}
	state := filepath.Join(s.Dir, fmt.Sprintf("state-%d", try))
	for _, d := range []string{state, filepath.Join(s.Dir, "spool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	plugstack := filepath.Join(s.Dir, "plugstack.conf")
	if err := os.WriteFile(plugstack, nil, 0o644); err != nil {
		return err
	}
	conf := s.confText(opts, state, plugstack, slurmdPort)
	if err := os.WriteFile(s.Conf, []byte(conf), 0o644); err != nil {
		return err
	}
	p, err := s.start("slurmctld", filepath.Join(s.Dir, fmt.Sprintf("slurmctld-%d.out", try)),
		s.bins.slurmctld, "-D", "-f", s.Conf)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := s.command(s.bins.scontrol, "ping").CombinedOutput()
		if bytes.Contains(out, []byte(" is UP")) {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("slurmctld exited at start (%v); its output:\n%s", p.err, tailFile(p.log, 4000))
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("slurmctld not UP within 30s (scontrol ping: %s); its output:\n%s",
				strings.TrimSpace(string(out)), tailFile(p.log, 4000))
		}
		time.Sleep(slurmPoll)
	}
}

// confText is the cluster's slurm.conf: root runs everything, munge through the cluster's own
// socket, all state and logs under Dir, short timeouts so that tests see state changes quickly.
func (s *Slurm) confText(opts SlurmOptions, state, plugstack string, slurmdPort int) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# written by internal/testenv (StartSlurm)")
	line("ClusterName=pcstest")
	line("SlurmctldHost=localhost(127.0.0.1)")
	line("SlurmctldPort=%d", s.Port)
	line("SlurmdPort=%d", slurmdPort)
	line("AuthType=auth/munge")
	line("AuthInfo=socket=%s", s.MungeSocket)
	line("CredType=cred/munge")
	line("SlurmUser=root")
	line("SlurmdUser=root")
	line("StateSaveLocation=%s", state)
	line("SlurmdSpoolDir=%s", filepath.Join(s.Dir, "spool", "%n"))
	line("SlurmctldLogFile=%s", filepath.Join(s.Dir, "slurmctld.log"))
	line("SlurmdLogFile=%s", filepath.Join(s.Dir, "slurmd-%n.log"))
	line("SlurmctldPidFile=%s", filepath.Join(s.Dir, "slurmctld.pid"))
	line("SlurmdPidFile=%s", filepath.Join(s.Dir, "slurmd-%n.pid"))
	line("PlugStackConfig=%s", plugstack)
	line("SlurmctldDebug=info")
	line("SlurmdDebug=info")
	line("ProctrackType=proctrack/pgid")
	line("TaskPlugin=task/none")
	line("JobAcctGatherType=jobacct_gather/none")
	line("AccountingStorageType=accounting_storage/none")
	line("JobCompType=jobcomp/none")
	line("SwitchType=switch/none")
	line("MpiDefault=none")
	line("MailProg=/bin/true")
	line("SelectType=select/cons_tres")
	line("SelectTypeParameters=CR_CPU")
	line("SchedulerType=sched/backfill")
	line("ReturnToService=1")
	line("SlurmdTimeout=10")
	line("SlurmctldTimeout=10")
	line("MessageTimeout=5")
	line("InactiveLimit=0")
	line("KillWait=2")
	line("MinJobAge=300")
	if opts.Prolog != "" {
		line("Prolog=%s", opts.Prolog)
	}
	if opts.PrologFlags != "" {
		line("PrologFlags=%s", opts.PrologFlags)
	}
	for _, l := range opts.Extra {
		line("%s", l)
	}
	for _, n := range opts.Nodes {
		line("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=localhost Port=%d CPUs=1 State=UNKNOWN", n, s.nodePorts[n])
	}
	for _, n := range opts.FutureNodes {
		line("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=localhost Port=%d CPUs=1 State=FUTURE", n, s.nodePorts[n])
	}
	line("PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP", s.Partition)
	return b.String()
}

// Env is the environment for Slurm commands against this cluster: PATH (BinDir first),
// SLURM_CONF, and the cluster's marker (so that jobs submitted with it are cleaned up).
func (s *Slurm) Env() []string {
	return []string{
		"PATH=" + s.BinDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"SLURM_CONF=" + s.Conf,
		slurmMarker + "=" + s.Dir,
	}
}

func (s *Slurm) command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = s.Env()
	cmd.Dir = s.Dir
	return cmd
}

// Command returns a Slurm command (such as "scontrol", "sbatch", "squeue", or a path) with the
// cluster's environment.
func (s *Slurm) Command(name string, args ...string) *exec.Cmd {
	path := name
	if !strings.Contains(name, "/") {
		if p, err := lookSlurmBin(name); err == nil {
			path = p
		}
	}
	return s.command(path, args...)
}

// Run runs a Slurm command and fails the test when it fails; it returns stdout and stderr.
func (s *Slurm) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := s.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("testenv: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Sbatch submits a batch job running script (a shell snippet) and returns its job ID. Extra
// sbatch arguments (such as -w NODE) come before the script.
func (s *Slurm) Sbatch(t testing.TB, script string, args ...string) string {
	t.Helper()
	out := filepath.Join(s.Dir, "job-%j.out")
	all := append([]string{"--parsable", "-o", out, "-e", out, "-D", s.Dir}, args...)
	all = append(all, "--wrap", script)
	id := strings.TrimSpace(s.Run(t, "sbatch", all...))
	if i := strings.IndexByte(id, ';'); i >= 0 {
		id = id[:i]
	}
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("testenv: sbatch printed %q, not a job ID", id)
	}
	return id
}

// JobOutput is the output file content of a job submitted with Sbatch ("" when absent).
func (s *Slurm) JobOutput(id string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "job-"+id+".out"))
	return string(b)
}

var jobStateRE = regexp.MustCompile(`\bJobState=(\S+)`)

// JobState is the state of a job as scontrol reports it (PENDING, RUNNING, COMPLETED...).
func (s *Slurm) JobState(t testing.TB, id string) string {
	t.Helper()
	out := s.Run(t, "scontrol", "-o", "show", "job", id)
	m := jobStateRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("testenv: no JobState in scontrol show job %s:\n%s", id, out)
	}
	return m[1]
}

// SlurmdLog is the log file of the slurmd of node.
func (s *Slurm) SlurmdLog(node string) string {
	return filepath.Join(s.Dir, "slurmd-"+node+".log")
}

// SlurmctldLog is slurmctld's log file.
func (s *Slurm) SlurmctldLog() string { return filepath.Join(s.Dir, "slurmctld.log") }

var nodeStateRE = regexp.MustCompile(`\bState=(\S+)`)

// StartSlurmd starts the slurmd of node (declared in SlurmOptions.Nodes) in the foreground and
// waits until the controller shows the node responding (not UNKNOWN, NOT_RESPONDING, FUTURE).
// It is killed when the test ends, or by StopSlurmd.
func (s *Slurm) StartSlurmd(t testing.TB, node string) {
	t.Helper()
	p := s.StartSlurmdNoWait(t, node)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := s.command(s.bins.scontrol, "-o", "show", "node", node).CombinedOutput()
		if m := nodeStateRE.FindSubmatch(out); m != nil && slurmResponding(string(m[1])) {
			return
		}
		if p.exited() {
			t.Fatalf("testenv: slurmd of %s exited at start (%v); its output:\n%s", node, p.err, tailFile(p.log, 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: node %s not registered within 30s of starting slurmd (%s); slurmd output:\n%s",
				node, strings.TrimSpace(string(out)), tailFile(p.log, 4000))
		}
		time.Sleep(slurmPoll)
	}
}

// StartSlurmdNoWait starts the slurmd of node and returns at once, as systemd starts slurmd
// when the unit it is ordered after is ready; the node registers when slurmd gets to it.
func (s *Slurm) StartSlurmdNoWait(t testing.TB, node string) *slurmProc {
	t.Helper()
	p, err := s.launchSlurmd(node)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return p
}

// LaunchSlurmd is StartSlurmdNoWait for any goroutine (it fails with an error, not the test).
func (s *Slurm) LaunchSlurmd(node string) error {
	_, err := s.launchSlurmd(node)
	return err
}

// SlurmdExited reports whether the slurmd of node was started and has exited (a port taken
// meanwhile by another process makes it exit at once: LaunchSlurmd again, as systemd's
// Restart=on-failure would).
func (s *Slurm) SlurmdExited(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.slurmds[node]
	return p != nil && p.exited()
}

func (s *Slurm) launchSlurmd(node string) (*slurmProc, error) {
	if _, ok := s.nodePorts[node]; !ok {
		return nil, fmt.Errorf("node %q is not declared in SlurmOptions.Nodes", node)
	}
	s.mu.Lock()
	if p := s.slurmds[node]; p != nil && !p.exited() {
		s.mu.Unlock()
		return nil, fmt.Errorf("slurmd of %s already running", node)
	}
	s.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(s.Dir, "spool", node), 0o755); err != nil {
		return nil, err
	}
	p, err := s.start("slurmd-"+node, filepath.Join(s.Dir, "slurmd-"+node+".out"),
		s.bins.slurmd, "-D", "-f", s.Conf, "-N", node)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.slurmds[node] = p
	s.mu.Unlock()
	return p, nil
}

func slurmResponding(state string) bool {
	if strings.HasSuffix(state, "*") {
		return false
	}
	for _, f := range strings.Split(state, "+") {
		switch f {
		case "UNKNOWN", "NOT_RESPONDING", "FUTURE":
			return false
		}
	}
	return true
}

// StopSlurmd stops the slurmd of node (SIGTERM, SIGKILL after 5 s) and waits for it. The
// controller notices only after SlurmdTimeout (10 s).
func (s *Slurm) StopSlurmd(t testing.TB, node string) {
	t.Helper()
	s.mu.Lock()
	p := s.slurmds[node]
	delete(s.slurmds, node)
	s.mu.Unlock()
	if p == nil {
		t.Fatalf("testenv: slurmd of %s is not running", node)
	}
	p.stop(5 * time.Second)
}

// start runs a daemon in its own process group with the cluster's environment, its stdout and
// stderr in logPath.
func (s *Slurm) start(name, logPath, path string, args ...string) (*slurmProc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := s.command(path, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &slurmProc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

func (p *slurmProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *slurmProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

func (p *slurmProc) stop(grace time.Duration) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // stragglers of the group
	case <-time.After(grace):
		p.kill()
	}
}

// killAll kills every daemon, then every process still carrying the cluster's marker
// (slurmstepd and jobs, which leave the daemons' process groups).
func (s *Slurm) killAll() {
	s.mu.Lock()
	procs := append([]*slurmProc(nil), s.procs...)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		_ = syscall.Kill(-procs[i].cmd.Process.Pid, syscall.SIGKILL)
	}
	for _, p := range procs {
		p.kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if killMarked(slurmMarker+"="+s.Dir) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killMarked sends SIGKILL to every process (but this one) whose environment holds marker and
// returns how many it found.
func killMarked(marker string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == marker {
				if err := syscall.Kill(pid, syscall.SIGKILL); err == nil || !errors.Is(err, syscall.ESRCH) {
					n++
				}
				break
			}
		}
	}
	return n
}

func (s *Slurm) dumpLogs(t testing.TB) {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	outs, _ := filepath.Glob(filepath.Join(s.Dir, "*.out"))
	for _, f := range append(files, outs...) {
		t.Logf("testenv: --- %s ---\n%s", filepath.Base(f), tailFile(f, 3000))
	}
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
