package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// view is a reader's look at a node: no lock, no writes. status and wait read local files only;
// plan may reach the network, for the instance (IMDS, as run resolves it) and for a remote
// --config on a node that has none cached.
type view struct {
	layout paths.Layout
	st     *state.State
	doc    *lifecycle.Document
	cache  *cache.Cache
	bootID string
	inst   string
	nodeID string
	// configNote is the line that says a --config differing from the cached document is
	// not used ("" when there is nothing to say).
	configNote string
}

func openView(o *Options, wantDoc bool) (*view, error) {
	v := &view{layout: paths.New(o.Root), nodeID: o.NodeID}
	v.cache = cache.New(v.layout)
	var err error
	v.st, err = state.Read(v.layout.StateFile(), v.layout.JournalFile())
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	v.bootID = o.BootID
	if v.bootID == "" {
		b, err := os.ReadFile(v.layout.BootID())
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "boot id: %w (give --boot-id)", err)
		}
		v.bootID = strings.TrimSpace(string(b))
	}
	v.inst = o.InstanceID
	if v.inst == "" && wantDoc {
		// plan answers for the instance run would see (IMDS, else /etc/machine-id), so a node
		// made from a used image plans a first boot, as it will run one.
		n := identity.Node{BootID: v.bootID}
		var md identity.Metadata
		if m := identity.NewIMDS(context.Background()); m != nil {
			md = m
		}
		if err := identity.Resolve(context.Background(), &n, md, v.layout.MachineID(), v.layout.BootID()); err == nil {
			v.inst = n.InstanceID
		}
	}
	if v.inst == "" && v.st != nil {
		// status and wait read what is recorded: they never wait on IMDS.
		v.inst = v.st.InstanceID
	}
	if !wantDoc {
		return v, nil
	}
	var data []byte
	switch {
	case o.Config != "" && (v.st == nil || v.st.InstanceID != v.inst || v.st.ConfigSHA == ""):
		data, err = boot.ReadDocument(context.Background(), boot.NewFetcher(o.download(), zap.NewNop()), o.Config, nil)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--config %s: %w", o.Config, err)
		}
	default:
		data, err = v.cache.Config()
		if errors.Is(err, os.ErrNotExist) {
			if o.Config == "" {
				return nil, exitcode.Errorf(exitcode.Usage, "no configuration cached on this node; give --config")
			}
			data, err = boot.ReadDocument(context.Background(), boot.NewFetcher(o.download(), zap.NewNop()), o.Config, nil)
		} else if err == nil && o.Config != "" && !boot.IsRemote(o.Config) {
			// plan shows what run will do: the cached document, and says so once.
			if given, gerr := boot.ReadDocument(context.Background(), nil, o.Config, nil); gerr == nil && !bytes.Equal(given, data) {
				v.configNote = boot.ConfigIgnoredLine(o.Config, v.layout.CachedConfig())
			}
		}
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "configuration: %w", err)
		}
	}
	v.doc, _, err = lifecycle.Parse(data, lifecycle.Options{})
	if err != nil {
		return nil, boot.InvalidConfig("configuration", err)
	}
	return v, nil
}

// cachedDoc loads the cached configuration if there is a usable one (status shows policies
// from it; it is optional there).
func (v *view) cachedDoc() {
	if data, err := v.cache.Config(); err == nil {
		v.doc, _, _ = lifecycle.Parse(data, lifecycle.Options{})
	}
}
