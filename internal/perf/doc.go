// Package perf holds the executor's performance workloads (W2 downloads under latency, W3
// start-up, W5 registration, W6 boot storm, W7 memory), each an ordinary Go test that drives
// the real binary against the real parts (versitygw, slurmctld + slurmd + munge).
//
// By default (`go test`, `make test`) each workload runs once at its smallest size and checks
// only that it still works: every script ran, every download is in the cache, the node
// registered. Nothing is timed against a threshold. With PCS_BENCH=1 (`make bench`, through
// scripts/bench.sh) each runs at full size, takes the median of PCS_BENCH_ROUNDS rounds
// (default 10), and appends its rows (measure, value, peer, ratio, target) as JSON lines to
// PCS_BENCH_REPORT; scripts/bench.sh prints them as a table. docs/performance.md explains each
// number.
package perf
