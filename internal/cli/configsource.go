package cli

import (
	"context"
	"io"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
)

// Stdin is how --config and validate name standard input.
const Stdin = boot.Stdin

// readConfigSource reads a configuration document from where --config and validate may name
// it (boot.ReadDocument: a file, s3://, https://, or "-" for stdin).
func readConfigSource(ctx context.Context, f *source.Fetcher, loc string, stdin io.Reader) ([]byte, error) {
	return boot.ReadDocument(ctx, f, loc, stdin)
}

// sourceName is how messages name a configuration source.
func sourceName(loc string) string {
	if loc == Stdin {
		return "standard input"
	}
	return loc
}
