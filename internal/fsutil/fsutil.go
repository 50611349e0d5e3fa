// Package fsutil holds the careful file operations every writer of the executor uses: atomic
// replacement (temp file, fsync, rename, fsync of the directory), directories and files created
// with exact modes whatever the umask, and opens that never follow a planted symlink.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// MkdirAll creates dir and its missing parents; dir itself gets exactly mode (parents 0755),
// whatever the umask. An existing dir that is a symlink is refused.
func MkdirAll(dir string, mode os.FileMode) error {
	fi, err := os.Lstat(dir)
	if err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: is a symlink, refusing to use it", dir)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a directory", dir)
		}
		if fi.Mode().Perm() != mode {
			if err := os.Chmod(dir, mode); err != nil {
				return fmt.Errorf("chmod %s: %w", dir, err)
			}
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chmod(dir, mode)
}

// WriteAtomic replaces path with data: a temp file in the same directory with exactly mode,
// fsync, rename over path, fsync of the directory. A crash at any point leaves either the old
// or the new content, never a partial file; the temp file is removed on error.
func WriteAtomic(path string, data []byte, mode os.FileMode) error {
	a, err := CreateAtomic(path, mode)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// Atomic is the new content of a file being written in pieces (a download streamed to disk):
// a temporary file beside path (named like RemoveStaleTemps's pattern, exactly mode) that
// replaces path only on Commit, after an fsync; Abort, or any failure, removes it. Until
// Commit nothing is visible at path, and a crash leaves only the temporary file, which the
// path's next writer removes (RemoveStaleTemps).
type Atomic struct {
	f    *os.File
	path string
	done bool
}

// CreateAtomic starts a new content for path.
func CreateAtomic(path string, mode os.FileMode) (*Atomic, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(tempPattern(path)))
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	a := &Atomic{f: f, path: path}
	if err := f.Chmod(mode); err != nil {
		a.Abort()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return a, nil
}

// Write appends to the new content.
func (a *Atomic) Write(p []byte) (int, error) {
	n, err := a.f.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", a.path, err)
	}
	return n, err
}

// Reset empties the new content (a download attempt starting over).
func (a *Atomic) Reset() error {
	if err := a.f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if _, err := a.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Commit makes the new content path's: fsync, rename over path, fsync of the directory. On
// failure the temporary file is removed and path keeps its old content.
func (a *Atomic) Commit() (err error) {
	if a.done {
		return fmt.Errorf("write %s: already committed or aborted", a.path)
	}
	defer func() {
		if err != nil {
			a.Abort()
		}
	}()
	if err = a.f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", a.path, err)
	}
	if err = a.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if fi, lerr := os.Lstat(a.path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		// rename replaces the link itself, never its target; say so anyway: someone planted it.
		return fmt.Errorf("write %s: a symlink was planted there; refusing to replace it", a.path)
	}
	if err = os.Rename(a.f.Name(), a.path); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	a.done = true
	return SyncDir(filepath.Dir(a.path))
}

// Abort drops the new content; after Commit it does nothing.
func (a *Atomic) Abort() {
	if a.done {
		return
	}
	a.done = true
	_ = a.f.Close()
	_ = os.Remove(a.f.Name())
}

// tempPattern is the glob of the temporary files WriteAtomic creates for path.
func tempPattern(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
}

// RemoveStaleTemps removes the temporary files an earlier WriteAtomic of path left behind when
// its process was killed between creating and renaming them. Only the single writer of path
// (the holder of its lock) may call it. It returns how many it removed.
func RemoveStaleTemps(path string) (int, error) {
	names, err := filepath.Glob(tempPattern(path))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("remove stale %s: %w", name, err)
		}
		n++
	}
	return n, nil
}

// SyncDir fsyncs a directory so a rename or create in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// OpenAppend opens path for appending, creating it with exactly mode; a symlink at path is
// refused (O_NOFOLLOW) with an error that says so.
func OpenAppend(path string, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("open %s: a symlink was planted there; refusing to follow it", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	if err := singleLink(fi, path); err != nil {
		f.Close()
		return nil, err
	}
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// singleLink refuses a file with more than one name: a hard link planted at a path the
// executor appends to would let it write into the linked file, wherever its other name is
// (O_NOFOLLOW stops symlinks only).
func singleLink(fi os.FileInfo, path string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("open %s: has %d hard links (one may have been planted); refusing to write to it", path, st.Nlink)
	}
	return nil
}

// CheckSingleLink is singleLink for a file opened elsewhere.
func CheckSingleLink(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return singleLink(fi, f.Name())
}

// ReadFile reads path without following a symlink at its last component.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("read %s: is a symlink; refusing to follow it", path)
		}
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
