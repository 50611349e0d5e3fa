package cli

import "github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"

// openView reads the node as a reader (boot.OpenView) with the global flags.
func openView(o *Options, wantDoc bool) (*boot.View, error) {
	return boot.OpenView(boot.ViewOptions{Root: o.Root, Config: o.Config, NodeID: o.NodeID, InstanceID: o.InstanceID,
		BootID: o.BootID, Download: o.download(), WantDoc: wantDoc})
}
