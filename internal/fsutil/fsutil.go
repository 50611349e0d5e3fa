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
func WriteAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(tempPattern(path)))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		// rename replaces the link itself, never its target; say so anyway: someone planted it.
		err = fmt.Errorf("write %s: a symlink was planted there; refusing to replace it", path)
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
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
