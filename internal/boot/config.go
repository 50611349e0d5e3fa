package boot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Stdin is how --config and validate name standard input.
const Stdin = "-"

// IsRemote reports whether a --config is a document to download (s3://, https://).
func IsRemote(loc string) bool {
	return strings.HasPrefix(loc, "s3://") || strings.HasPrefix(loc, "https://")
}

// ReadDocument reads a configuration document from where --config and validate may name it: a
// file, an s3:// or https:// document (through the fetcher, with its retries), or "-" for
// stdin (nil: os.Stdin; at most lifecycle.MaxDocumentSize+1 bytes are read, so a larger
// document is refused by the parser with its size).
func ReadDocument(ctx context.Context, f *source.Fetcher, loc string, stdin io.Reader) ([]byte, error) {
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
	case IsRemote(loc):
		return f.FetchDocument(ctx, loc)
	}
	return os.ReadFile(loc)
}

// InvalidConfig is a configuration that does not parse, as a usage error (exit 2) listing
// every problem with its JSON path under name.
func InvalidConfig(name string, err error) error {
	var ve *lifecycle.ValidationError
	if errors.As(err, &ve) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: invalid configuration:", name)
		for _, p := range ve.Problems {
			b.WriteString("\n  " + p.String())
		}
		return &exitcode.Error{Code: exitcode.Usage, Msg: b.String(), Err: err}
	}
	return exitcode.Errorf(exitcode.Usage, "%s: %w", name, err)
}

// LoadConfig settles the instance's configuration: the copy cached at first boot when there
// is one (a differing --config is logged and ignored: an instance's configuration never
// changes), else --config, validated and then cached.
func (s *Session) LoadConfig(ctx context.Context) error {
	cached, ok, err := s.cachedConfig()
	if err != nil {
		return err
	}
	if ok {
		s.noteIgnoredConfig(cached)
		doc, _, err := lifecycle.Parse(cached, lifecycle.Options{})
		if err != nil {
			return InvalidConfig(s.Layout.CachedConfig(), err)
		}
		s.Doc = doc
		return nil
	}
	return s.firstConfig(ctx)
}

// cachedConfig is the configuration cached for this instance, if any. A cached copy that is
// a symlink, writable by others, owned by someone else, or changed since it was cached is
// never used, nor silently replaced (exit 1).
func (s *Session) cachedConfig() ([]byte, bool, error) {
	st := s.Store.State
	cached, err := s.Cache.Config()
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		s.Log.Error("cached configuration refused", zap.String("path", s.Layout.CachedConfig()), zap.Error(err))
		return nil, false, exitcode.Errorf(exitcode.Internal, "cached configuration %s: %w", s.Layout.CachedConfig(), err)
	}
	if st.ConfigSHA == "" {
		return nil, false, nil // another instance's copy, or one never recorded: not ours
	}
	if got := cache.Digest(cached); got != st.ConfigSHA {
		s.Log.Error("cached configuration changed on disk; refusing it", zap.String("path", s.Layout.CachedConfig()))
		return nil, false, exitcode.Errorf(exitcode.Internal, "cached configuration %s changed on disk since it was cached (sha256 %s, recorded %s)",
			s.Layout.CachedConfig(), got, st.ConfigSHA)
	}
	return cached, true, nil
}

// noteIgnoredConfig logs what becomes of a --config given once the configuration is cached.
func (s *Session) noteIgnoredConfig(cached []byte) {
	cfg := s.opts.Config
	switch {
	case cfg == "":
	case IsRemote(cfg):
		// Not fetched: the cached copy is used whatever it says, and a boot must not wait on
		// the network (or its retries) for a document it will ignore.
		s.Log.Info("--config not fetched: the configuration cached at first boot is used (an instance's configuration never changes)",
			zap.String("config", cfg), zap.String("cached", s.Layout.CachedConfig()))
	default:
		given, err := os.ReadFile(cfg)
		switch {
		case err != nil:
			s.Log.Warn("--config unreadable; using the configuration cached at first boot", zap.String("config", cfg), zap.Error(err))
		case !bytes.Equal(given, cached):
			// One clear line for people; executor.log has the WARN (not copied to stderr).
			s.fileLog.Warn("--config differs from the configuration cached at first boot; ignoring it (an instance's configuration never changes)",
				zap.String("config", cfg), zap.String("cached", s.Layout.CachedConfig()))
			if s.opts.Stderr != nil {
				fmt.Fprintln(s.opts.Stderr, ConfigIgnoredLine(cfg, s.Layout.CachedConfig()))
			}
		}
	}
}

// firstConfig reads --config on the instance's first run, validates it and caches it.
func (s *Session) firstConfig(ctx context.Context) error {
	cfg := s.opts.Config
	if cfg == "" {
		return exitcode.Errorf(exitcode.Usage, "no configuration: this is the first run on instance %s; give --config FILE|s3://…|https://…", s.Node.InstanceID)
	}
	data, err := ReadDocument(ctx, s.Fetcher, cfg, s.opts.Stdin)
	if err != nil {
		s.Log.Error("cannot read configuration", zap.String("config", cfg), zap.Error(err))
		// Exit 2 for a remote document too: without its configuration the instance has nothing
		// to run, and the usual causes (wrong bucket, key, owner or host) are the caller's.
		return exitcode.Errorf(exitcode.Usage, "--config %s: %w", cfg, err)
	}
	dec, err := lifecycle.Decode(data, lifecycle.Options{})
	if err != nil {
		s.Log.Error("invalid configuration", zap.String("config", cfg), zap.String("form", string(dec.Form)), zap.Error(err))
		return InvalidConfig(cfg, err)
	}
	for _, w := range dec.Warnings {
		s.Log.Info("configuration warning", zap.String("path", w.Path), zap.String("warning", w.Message))
	}
	if err := s.Cache.PutConfig(data); err != nil {
		return exitcode.Wrap(exitcode.Internal, err)
	}
	s.Store.State.ConfigSHA = cache.Digest(data)
	if err := s.Store.Save(); err != nil {
		return exitcode.Wrap(exitcode.Internal, err)
	}
	s.Log.Info("configuration cached", zap.String("config", cfg), zap.String("sha256", s.Store.State.ConfigSHA),
		zap.String("form", dec.Form.Describe()))
	s.Doc = dec.Document
	return nil
}

// DefaultBootstrappedTimeout bounds nodeBootstrapped (SPEC §4: the node's ~30-minute
// registration budget); nodeReady has no limit by default.
const DefaultBootstrappedTimeout = 30 * time.Minute

// StageTimeouts are the stage limits of a run: nodeBootstrapped's default, and --stage-timeout
// (given, nil when not) as the limit of stageName, the stage run --stage runs (under daemon,
// nodeBootstrapped: it sets that stage's limit only).
func StageTimeouts(stageName string, given *time.Duration) map[string]time.Duration {
	m := map[string]time.Duration{lifecycle.StageNodeBootstrapped: DefaultBootstrappedTimeout}
	if given != nil {
		m[stageName] = *given
	}
	return m
}
