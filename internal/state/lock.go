package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
)

// Lock is the exclusive lock of state writers (flock on a file that names its holder).
type Lock struct {
	f         *os.File
	holderErr error
}

// LockBusyError says another executor holds the lock.
type LockBusyError struct {
	Path   string
	Holder string
	Waited time.Duration
}

func (e *LockBusyError) Error() string {
	return fmt.Sprintf("another pcs-lifecycle holds %s (%s); gave up after %s (--lock-timeout)", e.Path, e.Holder, e.Waited)
}

// Acquire takes the exclusive lock, waiting up to timeout (polling; ctx cancels the wait).
func Acquire(ctx context.Context, path string, timeout time.Duration, holder string) (*Lock, error) {
	return AcquireNotify(ctx, path, timeout, holder, nil)
}

// AcquireNotify is Acquire that calls waiting, once, with the holder's line when the lock is
// busy and it starts to wait.
func AcquireNotify(ctx context.Context, path string, timeout time.Duration, holder string, waiting func(holder string)) (*Lock, error) {
	if err := fsutil.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, FileMode)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lock %s: a symlink was planted there; refusing to follow it", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := fsutil.CheckSingleLink(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	start := time.Now()
	delay := 10 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if waiting != nil {
			waiting(readHolder(f))
			waiting = nil
		}
		if time.Since(start) >= timeout {
			h := readHolder(f)
			f.Close()
			return nil, &LockBusyError{Path: path, Holder: h, Waited: time.Since(start).Round(time.Millisecond)}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
	// The holder line only names who holds the lock: a failure to write it (a full disk) does
	// not release the lock, it is reported by HolderErr.
	l := &Lock{f: f}
	if err := f.Truncate(0); err != nil {
		l.holderErr = fmt.Errorf("lock %s: holder line: %w", path, err)
	} else if _, err := f.WriteAt([]byte(holder+"\n"), 0); err != nil {
		l.holderErr = fmt.Errorf("lock %s: holder line: %w", path, err)
	}
	return l, nil
}

// HolderErr is why the holder line could not be written (nil when it was).
func (l *Lock) HolderErr() error { return l.holderErr }

// Holder describes the calling process for the lock file.
func Holder(what string) string {
	return "pid " + strconv.Itoa(os.Getpid()) + " " + what + " since " + time.Now().UTC().Format(time.RFC3339)
}

func readHolder(f *os.File) string {
	b := make([]byte, 256)
	n, _ := f.ReadAt(b, 0)
	h := strings.TrimSpace(string(b[:n]))
	if h == "" {
		return "holder unknown"
	}
	return h
}

// Release drops the lock.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// Held reports, without waiting, whether a writer holds the lock at path now, and who.
func Held(path string) (bool, string) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false, ""
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true, readHolder(f)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, ""
}
