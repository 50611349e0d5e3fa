package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// State is one node as `scontrol show node` prints it.
type State struct {
	Name string
	// States is the State= field split on "+": the base state first (IDLE, ALLOCATED, MIXED,
	// DOWN, UNKNOWN, FUTURE...), then its flags (DRAIN, NOT_RESPONDING, COMPLETING, CLOUD,
	// POWERED_DOWN...). The one-character suffixes of the short forms ("IDLE*") are
	// spelled out.
	States []string
	// Reason is the drain or down reason as set, without the " [user@time]" Slurm appends.
	Reason     string
	ReasonUser string // who set Reason ("root", "slurm"), when Slurm shows it
	ReasonTime string // when Reason was set, as Slurm prints it
	Comment    string
	// Fields holds every field as printed, State, Reason and Comment included.
	Fields map[string]string
}

// Has reports whether the base state or one of the flags is s (such as "DRAIN").
func (st State) Has(s string) bool {
	for _, x := range st.States {
		if x == s {
			return true
		}
	}
	return false
}

// Base is the base state ("IDLE", "DOWN"...), "" when unknown.
func (st State) Base() string {
	if len(st.States) == 0 {
		return ""
	}
	return st.States[0]
}

// Drained reports whether the node is drained or draining (no new job starts on it).
func (st State) Drained() bool {
	return st.Has("DRAIN") || st.Has("DRAINED") || st.Has("DRAINING")
}

// String is the State field as Slurm prints it, such as "IDLE+DRAIN".
func (st State) String() string { return strings.Join(st.States, "+") }

// notRegistered are the base states and flags of a node whose slurmd has not (or no longer)
// registered with the controller: it never answered since the controller started (UNKNOWN),
// it is declared but not in use (FUTURE), it stopped answering (NOT_RESPONDING, also on a DOWN
// node), or it is a power-saving node not yet up again (POWERED_DOWN, POWERING_UP,
// REBOOT_ISSUED). A node DOWN or DRAINED without NOT_RESPONDING did register: its slurmd
// answers, an operator or a policy keeps jobs off it.
var notRegistered = []string{"UNKNOWN", "FUTURE", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_UP", "REBOOT_ISSUED"}

// Registered reports whether st shows a node whose slurmd registered with the controller and
// responds (SPEC §8: not NOT_RESPONDING, FUTURE or UNKNOWN).
func Registered(st State) bool {
	if len(st.States) == 0 {
		return false
	}
	for _, s := range notRegistered {
		if st.Has(s) {
			return false
		}
	}
	return true
}

// stateSuffixes are the flags Slurm's short state forms append as one character.
var stateSuffixes = map[byte]string{
	'*': "NOT_RESPONDING",
	'~': "POWERED_DOWN",
	'#': "POWERING_UP",
	'%': "POWERING_DOWN",
	'!': "POWER_DOWN",
	'@': "REBOOT_REQUESTED",
	'^': "REBOOT_ISSUED",
	'$': "MAINTENANCE",
	'-': "PLANNED",
}

// splitState turns "IDLE+DRAIN" or "IDLE*" into its parts.
func splitState(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "+") {
		var flags []string
		for len(p) > 1 {
			f, ok := stateSuffixes[p[len(p)-1]]
			if !ok {
				break
			}
			flags = append(flags, f)
			p = p[:len(p)-1]
		}
		if p != "" {
			out = append(out, strings.ToUpper(p))
		}
		out = append(out, flags...)
	}
	return out
}

// wholeLine are the fields `scontrol show node` prints on a line of their own, whose value
// runs to the end of the line and may hold spaces.
var wholeLine = []string{"Reason=", "Comment=", "OS=", "Extra="}

// reasonRE splits "text [user@time]". Compiled on first use: every pcs-lifecycle command
// pays for package initialisation, and status has a start-up budget.
var reasonRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.*?) ?\[([^\[\]@]*)@([^\[\]]*)\]$`)
})

// ParseNodes parses the output of `scontrol show node` (the multi-line form, not -o): records
// separated by blank lines, each beginning with NodeName=.
func ParseNodes(out []byte) ([]State, error) {
	var nodes []State
	var cur *State
	var lastKey string
	flush := func() {
		if cur != nil {
			nodes = append(nodes, finish(*cur))
			cur = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, "NodeName=") {
			flush()
			cur = &State{Fields: map[string]string{}}
		}
		if cur == nil {
			return nil, fmt.Errorf("parse scontrol show node: unexpected line %q", line)
		}
		whole := false
		for _, p := range wholeLine {
			if strings.HasPrefix(line, p) {
				k, v, _ := strings.Cut(line, "=")
				cur.Fields[k] = v
				lastKey, whole = k, true
				break
			}
		}
		if whole {
			continue
		}
		for _, tok := range strings.Fields(line) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok || k == "" {
				// A value with spaces in it: the rest of the previous field.
				if lastKey != "" {
					cur.Fields[lastKey] += " " + tok
				}
				continue
			}
			cur.Fields[k] = v
			lastKey = k
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse scontrol show node: %w", err)
	}
	flush()
	return nodes, nil
}

func finish(st State) State {
	st.Name = st.Fields["NodeName"]
	if s := st.Fields["State"]; s != "" {
		st.States = splitState(s)
	}
	st.Comment = st.Fields["Comment"]
	st.Reason = st.Fields["Reason"]
	if m := reasonRE().FindStringSubmatch(st.Reason); m != nil {
		st.Reason, st.ReasonUser, st.ReasonTime = m[1], m[2], m[3]
	}
	return st
}

// ParseNode parses `scontrol show node NAME` and returns NAME's record.
func ParseNode(out []byte, name string) (State, error) {
	nodes, err := ParseNodes(out)
	if err != nil {
		return State{}, err
	}
	for _, n := range nodes {
		if n.Name == name {
			if len(n.States) == 0 {
				return State{}, fmt.Errorf("parse scontrol show node %s: no State field", name)
			}
			return n, nil
		}
	}
	return State{}, fmt.Errorf("parse scontrol show node %s: no record of the node in %q", name, truncate(out, 200))
}

func truncate(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
