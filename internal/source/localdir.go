package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// LocalDir serves scripts from a folder on this machine instead of downloading them, for
// `pcs-lifecycle try`: the document keeps its real s3:// and https:// locations, and each is
// looked up in the folder by its path after the bucket or host (s3://bucket/lifecycle/a.sh →
// DIR/lifecycle/a.sh), then by its file name alone (DIR/a.sh). The size cap and the checksum
// apply as to a download; a missing file is NotFound, naming both paths tried.
type LocalDir struct {
	// Dir is the folder scripts are taken from.
	Dir string
	// MaxSize is the largest script accepted, in bytes; 0 means DefaultMaxSize.
	MaxSize int64
}

// Candidates are the files of dir that stand for location, most specific first. A location
// that is not s3:// or https://, or whose path would leave dir, has none.
func Candidates(dir, location string) []string {
	var p string
	switch {
	case strings.HasPrefix(location, "s3://"):
		_, key, ok := strings.Cut(strings.TrimPrefix(location, "s3://"), "/")
		if !ok {
			return nil
		}
		p = key
	case strings.HasPrefix(location, "https://"):
		u, err := url.Parse(location)
		if err != nil {
			return nil
		}
		p = u.Path
	default:
		return nil
	}
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" || p == "." {
		return nil
	}
	var out []string
	if filepath.IsLocal(p) {
		out = append(out, filepath.Join(dir, filepath.FromSlash(p)))
	}
	if base := path.Base(p); base != p && filepath.IsLocal(base) {
		out = append(out, filepath.Join(dir, base))
	}
	return out
}

// Fetch reads the script standing for src from the folder and checks its size and checksum.
func (l LocalDir) Fetch(ctx context.Context, src lifecycle.ScriptSource) (Result, error) {
	res, _, err := l.FetchPath(ctx, src)
	return res, err
}

// FetchPath is Fetch that also returns the file it read.
func (l LocalDir) FetchPath(ctx context.Context, src lifecycle.ScriptSource) (Result, string, error) {
	loc := src.ScriptLocation
	if err := ctx.Err(); err != nil {
		return Result{}, "", newError(loc, Canceled, 0, context.Cause(ctx))
	}
	max := l.MaxSize
	if max <= 0 {
		max = DefaultMaxSize
	}
	paths := Candidates(l.Dir, loc)
	if len(paths) == 0 {
		return Result{}, "", newError(loc, Invalid, 0, fmt.Errorf("no file name in the location to look up in %s", l.Dir))
	}
	for _, p := range paths {
		data, err := readCappedFile(p, max)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, errLocalTooLarge):
			return Result{}, "", &Error{Location: loc, Kind: TooLarge, Attempts: 1, Err: fmt.Errorf("%s: more than %d bytes (the limit)", p, max)}
		case err != nil:
			return Result{}, "", &Error{Location: loc, Kind: Other, Attempts: 1, Err: err}
		}
		sum := sha256.Sum256(data)
		res := Result{Data: data, SHA256: hex.EncodeToString(sum[:]), Attempts: 1}
		if want := strings.ToLower(src.Checksum); want != "" && res.SHA256 != want {
			return Result{}, "", &Error{Location: loc, Kind: ChecksumMismatch, Attempts: 1,
				Err: fmt.Errorf("%s: expected sha256 %s, got %s (%d bytes)", p, want, res.SHA256, len(data))}
		}
		return res, p, nil
	}
	return Result{}, "", &Error{Location: loc, Kind: NotFound, Attempts: 1,
		Err: fmt.Errorf("no local copy: looked for %s", strings.Join(paths, " and "))}
}

var errLocalTooLarge = errors.New("file larger than the limit")

// readCappedFile reads a regular file of at most max bytes (never more than max+1 are read).
func readCappedFile(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if int64(len(data)) > max {
		return nil, errLocalTooLarge
	}
	return data, nil
}
