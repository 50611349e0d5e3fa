package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
)

// Modes of the state directory and files.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// CorruptError says a state file cannot be read. The executor never resets such a state
// silently: the operator must look at it (and may move it aside to start over).
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state %s is corrupt: %v (move it aside to start the instance's history anew)", e.Path, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// Read loads the snapshot and folds the journal into it. A missing snapshot and journal give
// (nil, nil). A torn last journal line (a write cut short by a crash or a full disk) is
// ignored; any other damage is a *CorruptError.
func Read(snapPath, journalPath string) (*State, error) {
	st, _, err := read(snapPath, journalPath)
	return st, err
}

func read(snapPath, journalPath string) (*State, int64, error) {
	var st *State
	data, err := fsutil.ReadFile(snapPath)
	switch {
	case err == nil:
		st, err = Decode(data)
		if err != nil {
			return nil, 0, &CorruptError{Path: snapPath, Err: err}
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, 0, fmt.Errorf("read state: %w", err)
	}
	j, err := fsutil.ReadFile(journalPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return st, 0, nil
		}
		return nil, 0, fmt.Errorf("read state journal: %w", err)
	}
	good, err := applyJournal(st, j)
	if err != nil {
		return nil, 0, &CorruptError{Path: journalPath, Err: err}
	}
	return st, good, nil
}

// Decode parses a snapshot.
func Decode(data []byte) (*State, error) {
	st := &State{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	derr := dec.Decode(st)
	if derr == nil && dec.More() {
		derr = errors.New("data after the top-level value")
	}
	if derr != nil || st.Version != Version {
		// One decode on the common path (status reads this on every call); the version is
		// looked at on its own only to explain a failure.
		var probe struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if probe.Version != Version {
			return nil, fmt.Errorf("unsupported version %d (this executor reads version %d)", probe.Version, Version)
		}
		return nil, fmt.Errorf("invalid JSON: %w", derr)
	}
	if st.InstanceID == "" || st.FirstBootID == "" {
		return nil, errors.New("instance_id and first_boot_id are required")
	}
	if st.Seq > MaxSeq {
		return nil, fmt.Errorf("seq %d is out of range", st.Seq)
	}
	if st.Scripts == nil {
		st.Scripts = map[string]*ScriptHistory{}
	}
	for i, b := range st.Boots {
		if b == nil || b.BootID == "" {
			return nil, fmt.Errorf("boots[%d]: boot_id is required", i)
		}
		if b.Stages == nil {
			b.Stages = map[string]*StageRun{}
		}
		for name, sr := range b.Stages {
			if sr == nil {
				return nil, fmt.Errorf("boots[%d].stages.%s: null", i, name)
			}
			for k, r := range sr.Scripts {
				if r == nil || r.Name == "" {
					return nil, fmt.Errorf("boots[%d].stages.%s.scripts[%d]: name is required", i, name, k)
				}
			}
		}
	}
	for k, h := range st.Scripts {
		if h == nil {
			return nil, fmt.Errorf("scripts[%q]: null", k)
		}
	}
	return st, nil
}

// applyJournal folds the events newer than the snapshot into st and returns the length of the
// well-formed prefix of the journal.
func applyJournal(st *State, j []byte) (int64, error) {
	var off int64
	for len(j) > 0 {
		i := bytes.IndexByte(j, '\n')
		if i < 0 {
			return off, nil // torn last line: the write never completed
		}
		line := j[:i]
		var e Event
		if err := json.Unmarshal(line, &e); err != nil || e.Run == nil || e.Run.Name == "" || e.BootID == "" || e.Stage == "" || e.Seq > MaxSeq {
			if len(j) == i+1 {
				return off, nil // a damaged last line is a torn write too
			}
			if err == nil {
				err = errors.New("incomplete event")
			}
			return off, fmt.Errorf("line at byte %d: %w", off, err)
		}
		if st == nil {
			return off, errors.New("journal without a snapshot")
		}
		if e.Seq > st.Seq {
			st.Apply(&e)
		}
		off += int64(i + 1)
		j = j[i+1:]
	}
	return off, nil
}

// Store is a writer's handle on the state: the caller holds the lock.
type Store struct {
	snapPath, journalPath string
	State                 *State
	journal               *os.File
	size                  int64
	sync                  *syncer
}

// syncer fdatasyncs the journal in the background. A durable event is flushed while the next
// script is being started rather than before: power loss within the flush loses the event
// either way, and the flush no longer adds its milliseconds to every script. Save and Close
// wait for it, and a failed flush is returned by the next Record, Save or Close.
type syncer struct {
	fd              int
	mu              sync.Mutex
	cond            *sync.Cond
	requested, done uint64
	err             error
	kick            chan struct{}
	exited          chan struct{}
}

func newSyncer(fd int) *syncer {
	y := &syncer{fd: fd, kick: make(chan struct{}, 1), exited: make(chan struct{})}
	y.cond = sync.NewCond(&y.mu)
	go y.loop()
	return y
}

func (y *syncer) loop() {
	defer close(y.exited)
	for range y.kick {
		y.mu.Lock()
		target := y.requested
		y.mu.Unlock()
		err := syscall.Fdatasync(y.fd)
		y.mu.Lock()
		if err != nil && y.err == nil {
			y.err = err
		}
		y.done = target
		y.cond.Broadcast()
		y.mu.Unlock()
	}
}

// request asks for a flush of everything written so far.
func (y *syncer) request() {
	y.mu.Lock()
	y.requested++
	y.mu.Unlock()
	select {
	case y.kick <- struct{}{}:
	default: // a flush is already due; it will take this write too
	}
}

// wait blocks until every requested flush is done and returns the first flush error.
func (y *syncer) wait() error {
	y.mu.Lock()
	defer y.mu.Unlock()
	for y.done < y.requested {
		y.cond.Wait()
	}
	return y.err
}

func (y *syncer) failed() error {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.err
}

func (y *syncer) stop() error {
	err := y.wait()
	close(y.kick)
	<-y.exited
	return err
}

// Flush waits until every durable event is on disk.
func (s *Store) Flush() error {
	if err := s.sync.wait(); err != nil {
		return fmt.Errorf("fsync state journal %s: %w", s.journalPath, err)
	}
	return nil
}

// Open reads the state for writing (st nil when there is none yet) and opens the journal. The
// caller holds the lock.
func Open(snapPath, journalPath string) (*Store, error) {
	if err := fsutil.MkdirAll(filepath.Dir(snapPath), DirMode); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	// A writer killed between creating a snapshot's temporary file and renaming it leaves the
	// file behind; the caller holds the lock, so no other writer is using one now.
	if _, err := fsutil.RemoveStaleTemps(snapPath); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	st, good, err := read(snapPath, journalPath)
	if err != nil {
		return nil, err
	}
	s := &Store{snapPath: snapPath, journalPath: journalPath, State: st}
	return s, s.openJournal(good)
}

func (s *Store) openJournal(good int64) error {
	f, err := os.OpenFile(s.journalPath, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, FileMode)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("open %s: a symlink was planted there; refusing to follow it", s.journalPath)
		}
		return fmt.Errorf("open state journal: %w", err)
	}
	if err := fsutil.CheckSingleLink(f); err != nil {
		f.Close()
		return fmt.Errorf("state journal: %w", err)
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		return err
	}
	// Drop a torn tail so the next event starts on a line of its own.
	if err := f.Truncate(good); err != nil {
		f.Close()
		return fmt.Errorf("state journal: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	s.journal, s.size = f, good
	s.sync = newSyncer(int(f.Fd()))
	return nil
}

// Close releases the journal.
func (s *Store) Close() error {
	if s.journal == nil {
		return nil
	}
	err := s.sync.stop()
	if err != nil {
		err = fmt.Errorf("fsync state journal %s: %w", s.journalPath, err)
	}
	if cerr := s.journal.Close(); err == nil {
		err = cerr
	}
	s.journal = nil
	return err
}

// Current is the state in memory (what Save writes and Record updates).
func (s *Store) Current() *State { return s.State }

// Save writes the whole state as the new snapshot (durably) and empties the journal.
func (s *Store) Save() error {
	if err := s.Flush(); err != nil {
		return err
	}
	data, err := json.Marshal(s.State)
	if err != nil {
		return err
	}
	if err := fsutil.WriteAtomic(s.snapPath, append(data, '\n'), FileMode); err != nil {
		return err
	}
	// Events up to State.Seq are in the snapshot now; a crash before the truncation leaves
	// them in the journal, where their sequence numbers make them ignored.
	if err := s.journal.Truncate(0); err != nil {
		return fmt.Errorf("state journal: %w", err)
	}
	_, err = s.journal.Seek(0, io.SeekStart)
	s.size = 0
	return err
}

// MaxSeq is the largest sequence number a snapshot or event may carry. Journal events are
// applied only when their number is above the snapshot's, so a number that could wrap around
// would make every later event invisible to readers; such a file is corrupt.
const MaxSeq = 1<<63 - 1

// Record appends an event to the journal and applies it. durable has the journal fdatasynced
// (in the background: see syncer; Flush waits for it). On a failed write the journal is cut
// back, so a full disk never leaves a torn line behind.
func (s *Store) Record(e *Event, durable bool) error {
	if err := s.sync.failed(); err != nil {
		return fmt.Errorf("fsync state journal %s: %w", s.journalPath, err)
	}
	if s.State.Seq >= MaxSeq {
		return fmt.Errorf("state %s: sequence number %d exhausted", s.snapPath, s.State.Seq)
	}
	e.Seq = s.State.Seq + 1
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := s.journal.Write(line); err != nil {
		_ = s.journal.Truncate(s.size)
		_, _ = s.journal.Seek(s.size, io.SeekStart)
		return fmt.Errorf("write state journal %s: %w", s.journalPath, err)
	}
	if durable {
		s.sync.request()
	}
	s.size += int64(len(line))
	s.State.Apply(e)
	return nil
}

// Reset replaces the state (a new instance): the old files are kept beside as
// state.json.<old-instance> for the operator.
func (s *Store) Reset(st *State) error {
	if s.State != nil {
		// Carry the sequence on: events of the old instance still in the journal (a crash
		// before the journal is emptied) must stay stale for the new one.
		st.Seq = s.State.Seq
		old := s.snapPath + "." + sanitize(s.State.InstanceID)
		data, err := json.MarshalIndent(s.State, "", " ")
		if err == nil {
			err = fsutil.WriteAtomic(old, data, FileMode)
		}
		if err != nil {
			// The directory that cannot take it cannot take the new state either.
			return fmt.Errorf("keeping the previous instance's state as %s: %w", old, err)
		}
	}
	s.State = st
	return s.Save()
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
