// Package cache keeps downloaded scripts and the node's configuration on disk: written
// atomically with exact modes, and verified against the digest recorded at download before
// every use. A cached file that changed on disk, or that someone else could have changed, is
// never handed out.
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
)

// Modes of the cache (SPEC: dir 0700, files 0700, root).
const (
	DirMode    os.FileMode = 0o700
	ScriptMode os.FileMode = 0o700
	ConfigMode os.FileMode = 0o600
)

// Cache is the script and configuration cache of one node.
type Cache struct {
	layout paths.Layout
}

// New returns the cache of a layout.
func New(l paths.Layout) *Cache { return &Cache{layout: l} }

// TamperedError says a cached file no longer matches what was downloaded, or is unsafe.
type TamperedError struct {
	Path   string
	Reason string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("cached %s: %s; refusing to use it", e.Path, e.Reason)
}

// Digest is the lowercase hex SHA-256 of data.
func Digest(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// PutScript stores a script's content atomically and returns its path and digest.
func (c *Cache) PutScript(name string, data []byte) (string, string, error) {
	return c.PutScriptFrom(name, func(w Temp) (string, error) {
		if _, err := w.Write(data); err != nil {
			return "", err
		}
		return Digest(data), nil
	})
}

// Temp is a cached file's new content while it is written: Reset starts it over (a download
// attempt after a failed one).
type Temp interface {
	io.Writer
	Reset() error
}

// PutScriptFrom stores the content fill writes as the cached copy of name, and returns its
// path and the digest fill returned (the SHA-256 of what it wrote, which it computed on the
// way: a download streamed through its hash). The content goes to a temporary file beside
// the cached name, fsynced and renamed over it only when fill succeeds; nothing partial is
// ever visible under the name, and a failed fill leaves the old copy as it was.
func (c *Cache) PutScriptFrom(name string, fill func(w Temp) (digest string, err error)) (string, string, error) {
	if err := checkName(name); err != nil {
		return "", "", err
	}
	if err := fsutil.MkdirAll(c.layout.ConfigDir(), DirMode); err != nil {
		return "", "", fmt.Errorf("cache: %w", err)
	}
	if err := fsutil.MkdirAll(c.layout.ScriptsDir(), DirMode); err != nil {
		return "", "", fmt.Errorf("cache: %w", err)
	}
	p := c.layout.CachedScript(name)
	// The executor holds the state lock: a temporary copy of name is an earlier, killed one's.
	if _, err := fsutil.RemoveStaleTemps(p); err != nil {
		return "", "", fmt.Errorf("cache: %w", err)
	}
	w, err := fsutil.CreateAtomic(p, ScriptMode)
	if err != nil {
		return "", "", fmt.Errorf("cache: %w", err)
	}
	digest, err := fill(w)
	if err != nil {
		w.Abort()
		return "", "", err
	}
	if err := w.Commit(); err != nil {
		return "", "", fmt.Errorf("cache: %w", err)
	}
	return p, strings.ToLower(digest), nil
}

// HasScript reports whether a cached copy of name exists.
func (c *Cache) HasScript(name string) bool {
	fi, err := os.Lstat(c.layout.CachedScript(name))
	return err == nil && fi.Mode().IsRegular()
}

// HeadSize is how much of a cached script Verify returns: enough for its "#!" line.
const HeadSize = 256

// Verify checks the cached copy of name against digest, reading it through the hash (never
// whole in memory), and returns its path and its first HeadSize bytes (or fewer). A missing
// file is os.ErrNotExist; a changed or unsafe one a *TamperedError.
func (c *Cache) Verify(name, digest string) (string, []byte, error) {
	if err := checkName(name); err != nil {
		return "", nil, err
	}
	p := c.layout.CachedScript(name)
	if fi, err := os.Lstat(c.layout.ScriptsDir()); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return p, nil, &TamperedError{Path: c.layout.ScriptsDir(), Reason: "is a symlink"}
	}
	f, err := openSafe(p)
	if err != nil {
		return p, nil, err
	}
	defer f.Close()
	if digest == "" {
		return p, nil, &TamperedError{Path: p, Reason: "no digest was recorded at download"}
	}
	h := sha256.New()
	head := make([]byte, HeadSize)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return p, nil, err
	}
	head = head[:n]
	h.Write(head)
	if _, err := io.Copy(h, f); err != nil {
		return p, nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(digest) {
		return p, nil, &TamperedError{Path: p, Reason: fmt.Sprintf("content changed on disk (sha256 %s, recorded %s)", got, digest)}
	}
	return p, head, nil
}

// readSafe reads a cached file, refusing symlinks and files others could write.
func readSafe(p string) ([]byte, error) {
	f, err := openSafe(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// openSafe opens a cached file for reading, refusing symlinks, anything but a regular file,
// and files others could write.
func openSafe(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &TamperedError{Path: p, Reason: "is a symlink"}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var reason string
	switch {
	case !fi.Mode().IsRegular():
		reason = "not a regular file"
	case fi.Mode().Perm()&0o022 != 0:
		reason = fmt.Sprintf("group- or world-writable (mode %04o)", fi.Mode().Perm())
	default:
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			reason = fmt.Sprintf("owned by uid %d, not %d", st.Uid, os.Geteuid())
		}
	}
	if reason != "" {
		f.Close()
		return nil, &TamperedError{Path: p, Reason: reason}
	}
	return f, nil
}

// PutConfig stores the node's configuration document atomically.
func (c *Cache) PutConfig(data []byte) error {
	if err := fsutil.MkdirAll(c.layout.ConfigDir(), DirMode); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if _, err := fsutil.RemoveStaleTemps(c.layout.CachedConfig()); err != nil {
		return fmt.Errorf("cache configuration: %w", err)
	}
	if err := fsutil.WriteAtomic(c.layout.CachedConfig(), data, ConfigMode); err != nil {
		return fmt.Errorf("cache configuration: %w", err)
	}
	return nil
}

// Config returns the cached configuration document (os.ErrNotExist when there is none).
func (c *Cache) Config() ([]byte, error) { return readSafe(c.layout.CachedConfig()) }

// Wipe removes every cached script and the cached configuration (a new instance).
func (c *Cache) Wipe() error {
	if err := os.RemoveAll(c.layout.ScriptsDir()); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Remove(c.layout.CachedConfig()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") || filepath.Base(name) != name {
		return fmt.Errorf("cache: script name %q cannot be a file name", name)
	}
	return nil
}
