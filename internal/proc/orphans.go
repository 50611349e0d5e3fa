package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GroupMembers returns the processes of process group pgid whose environment holds every one
// of marks (such as "PCS_LIFECYCLE_SCRIPT=name"), read from /proc. The marks keep a recycled
// group ID from ever naming someone else's processes.
func GroupMembers(pgid int, marks ...string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil || pgid <= 1 {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		ok := true
		for _, m := range marks {
			if !bytes.Contains(append(append([]byte{0}, env...), 0), append(append([]byte{0}, m...), 0)) {
				ok = false
				break
			}
		}
		if ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillOrphanGroup stops what is left of a script run by an executor that died: the members of
// group pgid carrying marks get SIGTERM, then SIGKILL after grace. It returns how many there
// were (0: nothing left, or the group ID now belongs to someone else).
func KillOrphanGroup(pgid int, marks []string, grace time.Duration) (int, error) {
	n := len(GroupMembers(pgid, marks...))
	if n == 0 {
		return 0, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return n, err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(GroupMembers(pgid, marks...)) == 0 {
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return n, err
	}
	return n, nil
}
