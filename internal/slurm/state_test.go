package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The files in testdata/ are real `scontrol --all --future show node NAME` outputs of Slurm
// 22.05 (Debian 12), captured from the daemons testenv.StartSlurm runs; see testdata/README.md.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestParseNodeCaptured(t *testing.T) {
	tests := []struct {
		file       string
		node       string
		states     []string
		reason     string
		reasonUser string
		comment    string
		registered bool
		drained    bool
	}{
		{file: "idle.txt", node: "node1", states: []string{"IDLE"}, registered: true},
		{file: "unknown.txt", node: "node2", states: []string{"UNKNOWN"}},
		{file: "unknown-not-responding.txt", node: "node2", states: []string{"UNKNOWN", "NOT_RESPONDING"}},
		{file: "future.txt", node: "node9", states: []string{"FUTURE"}},
		{file: "down-not-responding.txt", node: "node1", states: []string{"DOWN", "NOT_RESPONDING"},
			reason: "Not responding", reasonUser: "root"},
		{file: "allocated.txt", node: "node1", states: []string{"ALLOCATED"}, registered: true},
		{file: "drained-ours.txt", node: "node1", states: []string{"IDLE", "DRAIN"},
			reason: "pcs-lifecycle: nodeReady running", reasonUser: "root", registered: true, drained: true},
		{file: "draining-operator.txt", node: "node1", states: []string{"ALLOCATED", "DRAIN"},
			reason: "operator: bad DIMM", reasonUser: "root", registered: true, drained: true},
		{file: "comment.txt", node: "node1", states: []string{"IDLE"},
			comment: "pcs-lifecycle: nodeReady/check gpu exit=3", registered: true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			st, err := ParseNode(readTestdata(t, tt.file), tt.node)
			require.NoError(t, err)
			assert.Equal(t, tt.node, st.Name)
			assert.Equal(t, tt.states, st.States)
			assert.Equal(t, tt.reason, st.Reason)
			assert.Equal(t, tt.reasonUser, st.ReasonUser)
			if tt.reason != "" {
				assert.NotEmpty(t, st.ReasonTime)
			}
			assert.Equal(t, tt.comment, st.Comment)
			assert.Equal(t, tt.registered, Registered(st), "Registered(%s)", st)
			assert.Equal(t, tt.drained, st.Drained())
			assert.Equal(t, "127.0.0.1", st.Fields["NodeAddr"])
			assert.Equal(t, "1", st.Fields["CPUTot"])
		})
	}
}

func TestParseNodeWholeLineFields(t *testing.T) {
	out := []byte("NodeName=n1 Arch=x86_64 CoresPerSocket=1 \n" +
		"   OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) \n" +
		"   State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n" +
		"   Reason=a [reason] with = signs and [brackets] [admin@2024-01-02T03:04:05]\n" +
		"   Comment=x=y z [not a reason@suffix]\n" +
		"\n" +
		"NodeName=n2 CoresPerSocket=1 \n" +
		"   State=IDLE*+CLOUD ThreadsPerCore=1\n")
	nodes, err := ParseNodes(out)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	n1 := nodes[0]
	assert.Equal(t, "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", n1.Fields["OS"])
	assert.Equal(t, []string{"MIXED", "DRAIN"}, n1.States)
	assert.Equal(t, "a [reason] with = signs and [brackets]", n1.Reason)
	assert.Equal(t, "admin", n1.ReasonUser)
	assert.Equal(t, "2024-01-02T03:04:05", n1.ReasonTime)
	assert.Equal(t, "x=y z [not a reason@suffix]", n1.Comment, "a comment keeps what looks like a reason suffix")
	assert.Equal(t, []string{"IDLE", "NOT_RESPONDING", "CLOUD"}, nodes[1].States)
	assert.False(t, Registered(nodes[1]))

	_, err = ParseNode(out, "n3")
	assert.ErrorContains(t, err, "no record of the node")
}

func TestParseNodeRejectsGarbage(t *testing.T) {
	_, err := ParseNodes([]byte("hello world\n"))
	assert.Error(t, err)
	_, err = ParseNode([]byte("NodeName=n1 Arch=x86_64\n"), "n1")
	assert.ErrorContains(t, err, "no State field")
}

func TestSplitState(t *testing.T) {
	tests := map[string][]string{
		"IDLE":                       {"IDLE"},
		"IDLE+DRAIN":                 {"IDLE", "DRAIN"},
		"IDLE+COMPLETING+DRAIN":      {"IDLE", "COMPLETING", "DRAIN"},
		"DOWN*":                      {"DOWN", "NOT_RESPONDING"},
		"IDLE~":                      {"IDLE", "POWERED_DOWN"},
		"IDLE#":                      {"IDLE", "POWERING_UP"},
		"IDLE+CLOUD+POWERED_DOWN":    {"IDLE", "CLOUD", "POWERED_DOWN"},
		"down*":                      {"DOWN", "NOT_RESPONDING"},
		"MIXED+DRAIN+NOT_RESPONDING": {"MIXED", "DRAIN", "NOT_RESPONDING"},
	}
	for in, want := range tests {
		assert.Equal(t, want, splitState(in), in)
	}
}

func TestRegistered(t *testing.T) {
	tests := []struct {
		state string
		want  bool
	}{
		{"IDLE", true},
		{"ALLOCATED", true},
		{"MIXED+DRAIN", true},
		{"IDLE+DRAIN", true},
		{"DOWN", true}, // an operator's DOWN: slurmd answers
		{"IDLE+CLOUD", true},
		{"UNKNOWN", false},
		{"UNKNOWN+NOT_RESPONDING", false},
		{"FUTURE", false},
		{"DOWN+NOT_RESPONDING", false},
		{"IDLE+NOT_RESPONDING", false},
		{"IDLE*", false},
		{"IDLE+CLOUD+POWERED_DOWN", false},
		{"IDLE+CLOUD+POWERING_UP", false},
		{"DOWN+REBOOT_ISSUED", false},
		{"", false},
	}
	for _, tt := range tests {
		st := State{States: splitState(tt.state)}
		assert.Equal(t, tt.want, Registered(st), tt.state)
	}
}

func TestClassifyCaptured(t *testing.T) {
	tests := []struct {
		file string
		want error
	}{
		{"err-no-conf-file.txt", ErrNoConfig},
		{"err-empty-conf-file.txt", ErrNoConfig},
		{"err-configless-failed.txt", ErrNoConfig},
		{"err-controller-unreachable.txt", ErrUnreachable},
		{"not-found.txt", ErrNodeNotFound},
		{"err-update-not-found.txt", ErrNodeNotFound},
		{"err-resume-not-drained.txt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := classify(strings.TrimSpace(string(readTestdata(t, tt.file))))
			assert.Equal(t, tt.want, got)
		})
	}
	assert.True(t, errors.Is(ErrNoConfig, ErrNotConfigured))
	assert.False(t, errors.Is(ErrUnreachable, ErrNotConfigured))
}

func TestCommandErrorWrapsKind(t *testing.T) {
	err := error(&CommandError{Args: []string{"show", "node", "n1"}, ExitCode: 1,
		Output: "slurm_load_node error: Unable to contact slurm controller (connect failure)", Kind: ErrUnreachable})
	assert.ErrorIs(t, err, ErrUnreachable)
	assert.NotErrorIs(t, err, ErrNotConfigured)
	assert.Equal(t, "scontrol show node n1: exit status 1 (slurm controller unreachable): slurm_load_node error: Unable to contact slurm controller (connect failure)", err.Error())

	te := error(&TimeoutError{Node: "n1", Timeout: 30 * time.Minute, Polls: 900, Last: State{States: []string{"UNKNOWN"}}})
	assert.ErrorIs(t, te, ErrRegistrationTimeout)
	assert.Equal(t, "node n1 not registered with the slurm controller within 30m0s (900 polls; last state UNKNOWN)", te.Error())
	te = &TimeoutError{Node: "n1", Timeout: time.Second, Polls: 1, LastErr: err}
	assert.NotErrorIs(t, te, ErrUnreachable, "a timeout is a timeout")
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, 2*time.Second, DefaultPollInterval, "SPEC §8 polls every 2 s")
	t.Setenv("SLURM_CONF", "/etc/slurm/test.conf")
	t.Setenv("SLURM_CONF_SERVER", "")
	t.Setenv("HOME", "/somewhere")
	assert.Equal(t, []string{"PATH=" + DefaultPATH, "SLURM_CONF=/etc/slurm/test.conf"}, DefaultEnv())
}

func TestScheduleWait(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		steady time.Duration
		want   []time.Duration
	}{
		{2 * time.Second, []time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond, 506250 * time.Microsecond,
			759375 * time.Microsecond, 1139062500, 1708593750, 2 * time.Second, 2 * time.Second, 2 * time.Second}},
		{0, []time.Duration{100 * ms, 150 * ms}},
		{5 * time.Second, []time.Duration{100 * ms, 150 * ms, 225 * ms}},
		{120 * ms, []time.Duration{100 * ms, 120 * ms, 120 * ms}},
		{50 * ms, []time.Duration{50 * ms, 50 * ms}},
	} {
		for i, want := range tc.want {
			assert.Equal(t, want, ScheduleWait(tc.steady, i+1), "steady %s, wait %d", tc.steady, i+1)
		}
	}
	// Over a 30 s wait: 21 checks, 5 more than polling every 2 s from the start (16).
	checks, at := 1, time.Duration(0)
	for at+ScheduleWait(2*time.Second, checks) <= 30*time.Second {
		at += ScheduleWait(2*time.Second, checks)
		checks++
	}
	assert.Equal(t, 16+5, checks)
}
