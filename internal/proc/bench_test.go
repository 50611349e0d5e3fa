package proc

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"testing"
)

// BenchmarkRunTrue and BenchmarkExecDirect together give Run's overhead per process.
func BenchmarkRunTrue(b *testing.B) {
	ctx := context.Background()
	spec := Spec{Path: "/bin/true"}
	for b.Loop() {
		res, err := Run(ctx, spec)
		if err != nil || res.Failed() {
			b.Fatalf("err %v, result %+v", err, res)
		}
	}
}

func BenchmarkExecDirect(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunFlood16MiB passes a 16 MiB flood through the capped copy: the allocations per run
// do not depend on the size of the output.
func BenchmarkRunFlood16MiB(b *testing.B) {
	const size = 16 << 20
	ctx := context.Background()
	spec := Spec{Path: "/usr/bin/head", Args: []string{"-c", strconv.Itoa(size), "/dev/zero"}, Output: io.Discard, MaxOutput: size}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, spec)
		if err != nil || res.Failed() || res.OutputBytes != size || res.Truncated {
			b.Fatalf("err %v, result %+v", err, res)
		}
	}
}
