package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/logging"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/scriptlog"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// session is a writer's hold on a node: logger, lock, identity, state, cache, configuration.
type session struct {
	o       *Options
	layout  paths.Layout
	log     *zap.Logger
	logFile *os.File
	node    identity.Node
	lock    *state.Lock
	store   *state.Store
	cache   *cache.Cache
	fetcher *source.Fetcher
	doc     *lifecycle.Document
}

func (o *Options) node() identity.Node {
	return identity.Node{NodeID: o.NodeID, ClusterID: o.ClusterID, ClusterName: o.ClusterName,
		ComputeNodeGroupID: o.CNGID, ComputeNodeGroupName: o.CNGName, InstanceID: o.InstanceID, BootID: o.BootID}
}

func (o *Options) validateCommon() error {
	if o.DownloadAttempts < 1 {
		return exitf(exitcode.Usage, "--download-attempts must be at least 1")
	}
	if o.DownloadBackoff < 0 || o.LockTimeout < 0 {
		return exitf(exitcode.Usage, "--download-backoff and --lock-timeout cannot be negative")
	}
	return nil
}

// openLogger opens executor.log (dirs 0750, file 0640) and builds the logger: JSON to the
// file, warnings and errors in short form to stderr.
func openLogger(l paths.Layout, level string) (*zap.Logger, *os.File, error) {
	lvl, err := logging.ParseLevel(level)
	if err != nil {
		return nil, nil, exitf(exitcode.Usage, "%v", err)
	}
	if err := fsutil.MkdirAll(l.LogDir(), scriptlog.DirMode); err != nil {
		return nil, nil, exitf(exitcode.Internal, "log directory: %v", err)
	}
	f, err := fsutil.OpenAppend(l.ExecutorLog(), scriptlog.FileMode)
	if err != nil {
		return nil, nil, exitf(exitcode.Internal, "executor log: %v", err)
	}
	return logging.New(f, lvl, logging.Stderr, zapcore.WarnLevel), f, nil
}

func (o *Options) fetcher(log *zap.Logger) *source.Fetcher {
	return source.New(source.Config{
		Attempts:            o.DownloadAttempts,
		Backoff:             o.DownloadBackoff,
		ExpectedBucketOwner: o.ExpectedBucketOwner,
		OnRetry: func(loc string, attempt int, err error, wait time.Duration) {
			log.Warn("download attempt failed; retrying", zap.String("location", loc), zap.Int("attempt", attempt),
				zap.Int64("wait_ms", wait.Milliseconds()), zap.String("error", err.Error()))
		},
	})
}

// downloader adapts the source fetcher to the stage runner.
type downloader struct{ f *source.Fetcher }

func (d downloader) Download(ctx context.Context, src lifecycle.ScriptSource, retry bool) ([]byte, error) {
	var res source.Result
	var err error
	if retry {
		res, err = d.f.Fetch(ctx, src)
	} else {
		res, err = d.f.FetchOnce(ctx, src)
	}
	return res.Data, err
}

// DownloadToCache streams the script through its hash into a temporary file of the cache,
// renamed over the cached copy once the download is whole and verified.
func (d downloader) DownloadToCache(ctx context.Context, c *cache.Cache, name string, src lifecycle.ScriptSource, retry bool) (string, int64, error) {
	var size int64
	_, digest, err := c.PutScriptFrom(name, func(w cache.Temp) (string, error) {
		fetch := d.f.FetchOnceTo
		if retry {
			fetch = d.f.FetchTo
		}
		res, err := fetch(ctx, src, w)
		size = res.Size
		return res.SHA256, err
	})
	return digest, size, err
}

// openSession takes the lock and loads everything a writer needs.
func openSession(ctx context.Context, o *Options, what string) (*session, error) {
	if err := o.validateCommon(); err != nil {
		return nil, err
	}
	s := &session{o: o, layout: paths.New(o.Root)}
	var err error
	s.log, s.logFile, err = openLogger(s.layout, o.LogLevel)
	if err != nil {
		return nil, err
	}
	s.lock, err = state.Acquire(ctx, s.layout.LockFile(), o.LockTimeout, state.Holder(what))
	if err != nil {
		s.close()
		if ctx.Err() != nil {
			return nil, exitf(interruptCode(ctx), "interrupted while waiting for the lock")
		}
		return nil, exitf(exitcode.Internal, "%v", err)
	}
	s.node = o.node()
	var md identity.Metadata
	if s.node.InstanceID == "" {
		if m := identity.NewIMDS(ctx); m != nil {
			md = m
		}
	}
	if err := identity.Resolve(ctx, &s.node, md, s.layout.MachineID(), s.layout.BootID()); err != nil {
		s.close()
		return nil, exitf(exitcode.Internal, "%v", err)
	}
	s.cache = cache.New(s.layout)
	s.store, err = state.Open(s.layout.StateFile(), s.layout.JournalFile())
	if err != nil {
		s.close()
		s.log.Error("cannot read state", zap.Error(err))
		return nil, exitf(exitcode.Internal, "%v", err)
	}
	now := time.Now().UTC()
	switch st := s.store.State; {
	case st == nil:
		err = s.store.Reset(state.New(s.node.InstanceID, s.node.BootID, now))
		if err == nil {
			s.log.Info("first boot of this instance", zap.String("instance_id", s.node.InstanceID), zap.String("boot_id", s.node.BootID))
			err = s.cache.Wipe() // an image may carry another instance's cache without its state
		}
	case st.InstanceID != s.node.InstanceID:
		s.log.Warn("state belongs to another instance (an image made from a used node); starting this instance's history anew",
			zap.String("previous_instance_id", st.InstanceID), zap.String("instance_id", s.node.InstanceID))
		if err = s.cache.Wipe(); err == nil {
			err = s.store.Reset(state.New(s.node.InstanceID, s.node.BootID, now))
		}
	}
	if err != nil {
		s.close()
		return nil, exitf(exitcode.Internal, "%v", err)
	}
	s.fetcher = o.fetcher(s.log)
	return s, nil
}

func (s *session) close() {
	if s.store != nil {
		s.store.Close()
	}
	if s.lock != nil {
		s.lock.Release()
	}
	if s.log != nil {
		_ = s.log.Sync()
	}
	if s.logFile != nil {
		s.logFile.Close()
	}
}

// readConfigArg reads --config: a file, an s3:// / https:// document, or "-" (stdin).
func readConfigArg(ctx context.Context, f *source.Fetcher, loc string) ([]byte, error) {
	return readConfigSource(ctx, f, loc, os.Stdin)
}

func usageProblems(name string, err error) error {
	var ve *lifecycle.ValidationError
	if errors.As(err, &ve) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: invalid configuration:", name)
		for _, p := range ve.Problems {
			b.WriteString("\n  " + p.String())
		}
		return exitf(exitcode.Usage, "%s", b.String())
	}
	return exitf(exitcode.Usage, "%s: %v", name, err)
}

// loadConfig settles the instance's configuration: the cached copy when there is one (a
// differing --config is logged and ignored), else --config, validated and then cached.
func (s *session) loadConfig(ctx context.Context) error {
	st := s.store.State
	cached, cerr := s.cache.Config()
	if cerr != nil && !errors.Is(cerr, os.ErrNotExist) {
		// A cached configuration that is a symlink, writable by others or owned by someone
		// else is never used, nor silently replaced.
		s.log.Error("cached configuration refused", zap.String("path", s.layout.CachedConfig()), zap.Error(cerr))
		return exitf(exitcode.Internal, "cached configuration %s: %v", s.layout.CachedConfig(), cerr)
	}
	if cerr == nil && st.ConfigSHA != "" && cache.Digest(cached) != st.ConfigSHA {
		s.log.Error("cached configuration changed on disk; refusing it", zap.String("path", s.layout.CachedConfig()))
		return exitf(exitcode.Internal, "cached configuration %s changed on disk since it was cached (sha256 %s, recorded %s)",
			s.layout.CachedConfig(), cache.Digest(cached), st.ConfigSHA)
	}
	haveCached := cerr == nil && st.ConfigSHA != ""
	if haveCached {
		switch {
		case s.o.Config == "":
		case isRemote(s.o.Config):
			// Not fetched: the cached copy is used whatever it says, and a boot must not wait
			// on the network (or its retries) for a document it will ignore.
			s.log.Info("--config not fetched: the configuration cached at first boot is used (an instance's configuration never changes)",
				zap.String("config", s.o.Config), zap.String("cached", s.layout.CachedConfig()))
		default:
			given, err := os.ReadFile(s.o.Config)
			switch {
			case err != nil:
				s.log.Warn("--config unreadable; using the configuration cached at first boot", zap.String("config", s.o.Config), zap.Error(err))
			case !bytes.Equal(given, cached):
				s.log.Warn("--config differs from the configuration cached at first boot; ignoring it (an instance's configuration never changes)",
					zap.String("config", s.o.Config), zap.String("cached", s.layout.CachedConfig()))
			}
		}
		doc, _, err := lifecycle.Parse(cached, lifecycle.Options{})
		if err != nil {
			return usageProblems(s.layout.CachedConfig(), err)
		}
		s.doc = doc
		return nil
	}
	if s.o.Config == "" {
		return exitf(exitcode.Usage, "no configuration: this is the first run on instance %s; give --config FILE|s3://…|https://…", s.node.InstanceID)
	}
	data, err := readConfigArg(ctx, s.fetcher, s.o.Config)
	if err != nil {
		s.log.Error("cannot read configuration", zap.String("config", s.o.Config), zap.Error(err))
		// Exit 2 for a remote document too: without its configuration the instance has nothing
		// to run, and the usual causes (wrong bucket, key, owner or host) are the caller's.
		return exitf(exitcode.Usage, "--config %s: %v", s.o.Config, err)
	}
	dec, err := lifecycle.Decode(data, lifecycle.Options{})
	doc, warnings := dec.Document, dec.Warnings
	if err != nil {
		s.log.Error("invalid configuration", zap.String("config", s.o.Config), zap.String("form", string(dec.Form)), zap.Error(err))
		return usageProblems(s.o.Config, err)
	}
	for _, w := range warnings {
		s.log.Info("configuration warning", zap.String("path", w.Path), zap.String("warning", w.Message))
	}
	if err := s.cache.PutConfig(data); err != nil {
		return exitf(exitcode.Internal, "%v", err)
	}
	st.ConfigSHA = cache.Digest(data)
	if err := s.store.Save(); err != nil {
		return exitf(exitcode.Internal, "%v", err)
	}
	s.log.Info("configuration cached", zap.String("config", s.o.Config), zap.String("sha256", st.ConfigSHA),
		zap.String("form", dec.Form.Describe()))
	s.doc = doc
	return nil
}

func (s *session) runner(force bool) *stage.Runner {
	return &stage.Runner{
		Layout: s.layout, Log: s.log, Doc: s.doc, Node: s.node, Store: s.store, Cache: s.cache,
		Downloader: downloader{s.fetcher}, Force: force,
	}
}

// interruptCode maps a signal cause to 130/143.
func interruptCode(ctx context.Context) int {
	var sc *SignalCause
	if errors.As(context.Cause(ctx), &sc) && sc.Signal == os.Interrupt {
		return exitcode.SIGINT
	}
	return exitcode.SIGTERM
}
