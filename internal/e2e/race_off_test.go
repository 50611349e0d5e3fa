//go:build !race

package e2e_test

// raceBuild: see race_on_test.go.
const raceBuild = false
