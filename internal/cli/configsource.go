package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Stdin is how --config and validate name standard input.
const Stdin = "-"

// isRemote reports whether a --config names an s3:// or https:// document.
func isRemote(loc string) bool {
	return strings.HasPrefix(loc, "s3://") || strings.HasPrefix(loc, "https://")
}

// readConfigSource reads a configuration document from where --config and validate may name
// it: a file, an s3:// or https:// document (through the fetcher, with its retries), or "-"
// for stdin (at most lifecycle.MaxDocumentSize+1 bytes are read, so a larger document is
// refused by the parser with its size).
func readConfigSource(ctx context.Context, f *source.Fetcher, loc string, stdin io.Reader) ([]byte, error) {
	switch {
	case loc == Stdin:
		if stdin == nil {
			stdin = os.Stdin
		}
		data, err := io.ReadAll(io.LimitReader(stdin, lifecycle.MaxDocumentSize+1))
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return data, nil
	case isRemote(loc):
		return f.FetchDocument(ctx, loc)
	}
	return os.ReadFile(loc)
}

// sourceName is how messages name a configuration source.
func sourceName(loc string) string {
	if loc == Stdin {
		return "standard input"
	}
	return loc
}
