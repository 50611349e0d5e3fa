package slurm

import "time"

// The registration wait's schedule (SPEC §8: "a schedule of the project's choosing that
// notices the registration quickly without loading the controller"). A node registers with
// the controller a fraction of a second after slurmd starts (100–400 ms measured on a loaded
// 2-core machine, docs/performance.md W5), and the boot calls WaitRegistered right after
// slurmd was allowed to start (the daemon's READY=1, or the nodeReady unit ordered after
// slurmd.service). So the first checks come fast, then spread out until they reach the
// steady interval (--registration-poll, 2 s by default):
//
//	check at 0, then after 100, 150, 225, 338, 506, 759, 1139, 1709 ms, then every 2 s
//
// A registration in the first second is noticed within a quarter of a second; one that takes
// takes 30 s costs 21 checks, 5 more than polling every 2 s from the start.
const (
	// FastFirstWait is the wait after the first check.
	FastFirstWait = 100 * time.Millisecond
	// FastGrowth is the factor from one wait to the next until the steady interval.
	FastGrowth = 1.5
)

// ScheduleWait is the wait after check n (1-based) of a registration wait whose steady
// interval is steady (<= 0 means DefaultPollInterval): FastFirstWait·FastGrowth^(n-1), at most
// steady.
func ScheduleWait(steady time.Duration, n int) time.Duration {
	if steady <= 0 {
		steady = DefaultPollInterval
	}
	w := FastFirstWait
	for i := 1; i < n && w < steady; i++ {
		w = time.Duration(float64(w) * FastGrowth)
	}
	return min(w, steady)
}
