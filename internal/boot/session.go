package boot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/logging"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/scriptlog"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Options open a Session (the global flags).
type Options struct {
	Root        string
	Config      string // --config: a file, s3:// or https://; "" for the cached copy
	LogLevel    string
	LockTimeout time.Duration
	Holder      string // what the lock file says holds it ("run --stage nodeReady")
	Node        identity.Node
	Download    source.Config
	Stderr      io.Writer // warnings and errors in short form
	Stdin       io.Reader // --config - (nil: os.Stdin)
}

// Session is a writer's hold on a node: logger, lock, identity, state, cache, configuration.
// The caller closes it.
type Session struct {
	Layout  paths.Layout
	Log     *zap.Logger
	Node    identity.Node
	Store   *state.Store
	Cache   *cache.Cache
	Fetcher *source.Fetcher
	Doc     *lifecycle.Document

	opts    Options
	logFile *os.File
	fileLog *zap.Logger // executor.log only, for what stderr says in its own words
	lock    *state.Lock
}

// Open takes the lock, resolves the node's identity and loads its state, starting the
// instance's history anew when the state belongs to no instance or to another one (a node
// made from a used image is a first boot again). The error carries its exit code.
func Open(ctx context.Context, o Options) (*Session, error) {
	s := &Session{opts: o, Layout: paths.New(o.Root)}
	var err error
	s.Log, s.logFile, err = openLogger(s.Layout, o.LogLevel, o.Stderr)
	if err != nil {
		return nil, err
	}
	lvl, _ := logging.ParseLevel(o.LogLevel) // openLogger checked it
	s.fileLog = logging.New(s.logFile, lvl, nil, 0)
	s.lock, err = state.AcquireNotify(ctx, s.Layout.LockFile(), o.LockTimeout, state.Holder(o.Holder), func(holder string) {
		s.Log.Info("waiting for another executor's lock", zap.String("holder", holder), zap.Duration("lock_timeout", o.LockTimeout))
	})
	if err == nil && s.lock.HolderErr() != nil {
		s.Log.Warn("could not write the lock's holder line", zap.Error(s.lock.HolderErr()))
	}
	if err != nil {
		if ctx.Err() != nil {
			s.fileLog.Warn("interrupted while waiting for the lock; nothing ran", zap.String("holder", o.Holder),
				zap.String("cause", causeOf(ctx)), zap.Int("exit_code", exitcode.Interrupted(ctx)))
			s.Close()
			return nil, exitcode.Errorf(exitcode.Interrupted(ctx), "interrupted while waiting for the lock")
		}
		s.Close()
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	s.Node = o.Node
	if err := s.resolveNode(ctx); err != nil {
		s.Close()
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	s.Cache = cache.New(s.Layout)
	s.Store, err = state.Open(s.Layout.StateFile(), s.Layout.JournalFile())
	if err != nil {
		s.Log.Error("cannot read state", zap.Error(err))
		s.Close()
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	if err := s.settleInstance(); err != nil {
		s.Close()
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	s.Fetcher = NewFetcher(o.Download, s.Log)
	return s, nil
}

// NewFetcher is the script and document downloader, its retries logged to log.
func NewFetcher(c source.Config, log *zap.Logger) *source.Fetcher {
	c.OnRetry = func(loc string, attempt int, err error, wait time.Duration) {
		log.Warn("download attempt failed; retrying", zap.String("location", loc), zap.Int("attempt", attempt),
			zap.Int64("wait_ms", wait.Milliseconds()), zap.Error(err))
		debugDownload(log, loc, err)
	}
	return source.New(c)
}

// debugDownload logs a download error's whole SDK text (request and host IDs) at DEBUG; the
// lines at other levels carry the short form (source.Error).
func debugDownload(log *zap.Logger, loc string, err error) {
	var e *source.Error
	if log == nil || !errors.As(err, &e) || !log.Core().Enabled(zap.DebugLevel) {
		return
	}
	log.Debug("download error detail", zap.String("location", loc), zap.String("error", e.Debug()))
}

// openLogger opens executor.log (dirs 0750, file 0640) and builds the logger: JSON to the
// file, warnings and errors in short form to console.
func openLogger(l paths.Layout, level string, console io.Writer) (*zap.Logger, *os.File, error) {
	lvl, err := logging.ParseLevel(level)
	if err != nil {
		return nil, nil, exitcode.Wrap(exitcode.Usage, err)
	}
	if err := fsutil.MkdirAll(l.LogDir(), scriptlog.DirMode); err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Internal, "log directory: %w", err)
	}
	f, err := fsutil.OpenAppend(l.ExecutorLog(), scriptlog.FileMode)
	if err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Internal, "executor log: %w", err)
	}
	consoleLevel := zapcore.WarnLevel
	if notify.IsJournal(console) {
		// Under systemd the journal is where an operator looks (journalctl -u): each script's
		// start, end and skip, with its stage, goes there too, not only to executor.log.
		consoleLevel = zapcore.InfoLevel
	}
	return logging.New(f, lvl, console, consoleLevel), f, nil
}

func (s *Session) resolveNode(ctx context.Context) error {
	var md identity.Metadata
	if s.Node.InstanceID == "" {
		if m := identity.NewIMDS(ctx); m != nil {
			md = m
		}
	}
	return identity.Resolve(ctx, &s.Node, md, s.Layout.MachineID(), s.Layout.BootID())
}

// settleInstance starts this instance's history when the state has none, or belongs to
// another instance; the cache an image may carry goes with it.
func (s *Session) settleInstance() error {
	now := time.Now().UTC()
	switch st := s.Store.State; {
	case st == nil:
		if err := s.Store.Reset(state.New(s.Node.InstanceID, s.Node.BootID, now)); err != nil {
			return err
		}
		s.Log.Info("first boot of this instance", zap.String("instance_id", s.Node.InstanceID), zap.String("boot_id", s.Node.BootID))
		return s.Cache.Wipe() // an image may carry another instance's cache without its state
	case st.InstanceID != s.Node.InstanceID:
		s.Log.Warn("state belongs to another instance (an image made from a used node); starting this instance's history anew",
			zap.String("previous_instance_id", st.InstanceID), zap.String("instance_id", s.Node.InstanceID))
		if err := s.Cache.Wipe(); err != nil {
			return err
		}
		return s.Store.Reset(state.New(s.Node.InstanceID, s.Node.BootID, now))
	}
	return nil
}

// Close releases the state, the lock and the log. Its error is the first that would lose
// something: the state's last write (journal fsync) or the log's.
func (s *Session) Close() error {
	var errs []error
	if s.Store != nil {
		if err := s.Store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.lock != nil {
		s.lock.Release()
	}
	if s.logFile != nil {
		// executor.log's last lines on disk (zap's own Sync would also sync stderr, which
		// always fails on a terminal or a pipe).
		if err := s.logFile.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("executor log: %w", err))
		}
		if err := s.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("executor log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Runner is the stage runner of this session.
func (s *Session) Runner(force bool) *stage.Runner {
	return &stage.Runner{
		Layout: s.Layout, Log: s.Log, Doc: s.Doc, Node: s.Node, Store: s.Store, Cache: s.Cache,
		Downloader: Downloader{F: s.Fetcher, Log: s.Log}, Force: force,
	}
}

// Boot is the boot sequence of this session, with the real parts: the runner r (its Observer
// becomes the boot, for sd_notify STATUS=), Slurm through sc, systemd through n.
func (s *Session) Boot(c Config, r *stage.Runner, sc Slurm, n notify.Notifier, stderr io.Writer) *Boot {
	c.NodeID = s.Node.NodeID
	b := &Boot{Config: c, Log: s.Log, Layout: s.Layout, Stages: r, Slurm: sc, Notify: n,
		Clock: SystemClock{}, Commands: ProcCommands{}, Stderr: stderr, FileLog: s.fileLog}
	r.Observer = b
	return b
}

// Downloader adapts the source fetcher to the stage runner.
type Downloader struct {
	F   *source.Fetcher
	Log *zap.Logger // the whole SDK text of a failure goes here at DEBUG (nil: nowhere)
}

// DownloadToCache streams the script through its hash into a temporary file of the cache,
// renamed over the cached copy once the download is whole and verified.
func (d Downloader) DownloadToCache(ctx context.Context, c stage.ScriptWriter, name string, src lifecycle.ScriptSource, retry bool) (string, int64, error) {
	var size int64
	_, digest, err := c.PutScriptFrom(name, func(w cache.Temp) (string, error) {
		fetch := d.F.FetchOnceTo
		if retry {
			fetch = d.F.FetchTo
		}
		res, err := fetch(ctx, src, w)
		size = res.Size
		return res.SHA256, err
	})
	debugDownload(d.Log, src.ScriptLocation, err)
	return digest, size, err
}

// Download fetches src, with retries when retry is set.
func (d Downloader) Download(ctx context.Context, src lifecycle.ScriptSource, retry bool) ([]byte, error) {
	var res source.Result
	var err error
	if retry {
		res, err = d.F.Fetch(ctx, src)
	} else {
		res, err = d.F.FetchOnce(ctx, src)
	}
	debugDownload(d.Log, src.ScriptLocation, err)
	return res.Data, err
}
