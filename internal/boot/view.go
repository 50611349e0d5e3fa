package boot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// View is a reader's look at a node (status, plan, wait): no lock, no writes. status and wait
// read local files only; plan may reach the network, for the instance (IMDS, as run resolves
// it) and for a remote --config on a node that has none cached.
type View struct {
	Layout     paths.Layout
	State      *state.State
	Doc        *lifecycle.Document
	Cache      *cache.Cache
	BootID     string
	InstanceID string
	NodeID     string
	// ConfigNote is the line that says a --config differing from the cached document is
	// not used ("" when there is nothing to say).
	ConfigNote string
}

// ViewOptions are the global flags a reader uses. WantDoc: plan's view, which needs the
// configuration and answers for the instance run would see.
type ViewOptions struct {
	Root, Config, NodeID, InstanceID, BootID string
	Download                                 source.Config
	WantDoc                                  bool
}

// OpenView reads the node. The error carries its exit code.
func OpenView(o ViewOptions) (*View, error) {
	wantDoc := o.WantDoc
	v := &View{Layout: paths.New(o.Root), NodeID: o.NodeID}
	v.Cache = cache.New(v.Layout)
	var err error
	v.State, err = state.Read(v.Layout.StateFile(), v.Layout.JournalFile())
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	v.BootID = o.BootID
	if v.BootID == "" {
		b, err := os.ReadFile(v.Layout.BootID())
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "boot id: %w (give --boot-id)", err)
		}
		v.BootID = strings.TrimSpace(string(b))
	}
	v.InstanceID = o.InstanceID
	if v.InstanceID == "" && wantDoc {
		// plan answers for the instance run would see (IMDS, else /etc/machine-id), so a node
		// made from a used image plans a first boot, as it will run one.
		n := identity.Node{BootID: v.BootID}
		var md identity.Metadata
		if m := identity.NewIMDS(context.Background()); m != nil {
			md = m
		}
		if err := identity.Resolve(context.Background(), &n, md, v.Layout.MachineID(), v.Layout.BootID()); err == nil {
			v.InstanceID = n.InstanceID
		}
	}
	if v.InstanceID == "" && v.State != nil {
		// status and wait read what is recorded: they never wait on IMDS.
		v.InstanceID = v.State.InstanceID
	}
	if !wantDoc {
		return v, nil
	}
	var data []byte
	switch {
	case o.Config != "" && (v.State == nil || v.State.InstanceID != v.InstanceID || v.State.ConfigSHA == ""):
		data, err = ReadDocument(context.Background(), NewFetcher(o.Download, zap.NewNop()), o.Config, nil)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--config %s: %w", o.Config, err)
		}
	default:
		data, err = v.Cache.Config()
		if errors.Is(err, os.ErrNotExist) {
			if o.Config == "" {
				return nil, exitcode.Errorf(exitcode.Usage, "no configuration cached on this node; give --config")
			}
			data, err = ReadDocument(context.Background(), NewFetcher(o.Download, zap.NewNop()), o.Config, nil)
		} else if err == nil && o.Config != "" && !IsRemote(o.Config) {
			// plan shows what run will do: the cached document, and says so once.
			if given, gerr := ReadDocument(context.Background(), nil, o.Config, nil); gerr == nil && !bytes.Equal(given, data) {
				v.ConfigNote = ConfigIgnoredLine(o.Config, v.Layout.CachedConfig())
			}
		}
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Internal, "configuration: %w", err)
		}
	}
	v.Doc, _, err = lifecycle.Parse(data, lifecycle.Options{})
	if err != nil {
		return nil, InvalidConfig("configuration", err)
	}
	return v, nil
}

// CachedDoc loads the cached configuration if there is a usable one (status shows policies
// from it; it is optional there).
func (v *View) CachedDoc() {
	if data, err := v.Cache.Config(); err == nil {
		v.Doc, _, _ = lifecycle.Parse(data, lifecycle.Options{})
	}
}

// StageEnded answers wait: whether stage ended on this boot (done), and the error with the
// exit code it ended with (nil for 0). An instance a TERMINATE marked failed has ended
// everything (exit 4); a stage running or interrupted has not ended.
func (v *View) StageEnded(stage string) (done bool, err error) {
	if v.State == nil || v.State.InstanceID != v.InstanceID {
		return false, nil
	}
	if t := v.State.Terminated; t != nil {
		return true, exitcode.Errorf(exitcode.Terminate, "instance terminated by %s/%s", t.Stage, t.Script)
	}
	b := v.State.Boot(v.BootID)
	if b == nil {
		return false, nil
	}
	sr := b.Stages[stage]
	if sr == nil || sr.Status == state.StageRunning || sr.Status == state.StageInterrupted {
		return false, nil
	}
	if sr.ExitCode != exitcode.OK {
		return true, exitcode.Errorf(sr.ExitCode, "%s finished with exit %d", stage, sr.ExitCode)
	}
	return true, nil
}
