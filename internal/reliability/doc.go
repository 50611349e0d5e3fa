// Package reliability holds no product code: its tests drive the built executor
// (bin/pcs-lifecycle, rebuilt by TestMain into a temporary directory) on sandbox nodes
// (--root) against the real parts — versitygw for s3://, a local TLS server with its own CA
// for https://, both reached through testenv.FaultProxy — and check what SPEC.md promises
// under download faults, kill -9 at any moment, concurrent executors, full disks, hostile
// local users and scripts that misbehave. docs/reliability.md publishes what they found.
//
// The long loops run a small count by default; PCS_RELIABILITY_FULL=1 (or
// -reliability.full) runs the full count. PCS_LIFECYCLE_BIN names a prebuilt binary to test
// instead of building one. PCS_RELIABILITY_REPORT=FILE appends one JSON line per measured
// experiment to FILE (the figures of docs/reliability.md).
package reliability
