//go:build race

package e2e_test

// raceBuild: this test binary was built with -race (make test's go test -race), so the
// executor under test is built with -race too: every black-box run is also a data race check.
const raceBuild = true
