package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
)

func (o *Options) node() identity.Node {
	return identity.Node{NodeID: o.NodeID, ClusterID: o.ClusterID, ClusterName: o.ClusterName,
		ComputeNodeGroupID: o.CNGID, ComputeNodeGroupName: o.CNGName, InstanceID: o.InstanceID, BootID: o.BootID}
}

func (o *Options) download() source.Config {
	return source.Config{Attempts: o.DownloadAttempts, Backoff: o.DownloadBackoff, ExpectedBucketOwner: o.ExpectedBucketOwner}
}

func (o *Options) validateCommon() error {
	if o.DownloadAttempts < 1 {
		return exitcode.Errorf(exitcode.Usage, "--download-attempts must be at least 1")
	}
	if o.DownloadBackoff < 0 || o.LockTimeout < 0 {
		return exitcode.Errorf(exitcode.Usage, "--download-backoff and --lock-timeout cannot be negative")
	}
	return nil
}

// openSession takes the node for a writer (boot.Open) with the global flags.
func openSession(ctx context.Context, cmd *cobra.Command, o *Options, holder string) (*boot.Session, error) {
	if err := o.validateCommon(); err != nil {
		return nil, err
	}
	return boot.Open(ctx, boot.Options{
		Root: o.Root, Config: o.Config, LogLevel: o.LogLevel, LockTimeout: o.LockTimeout, Holder: holder,
		Node: o.node(), Download: o.download(), Stderr: cmd.ErrOrStderr(), Stdin: cmd.InOrStdin(),
	})
}

// closeSession closes s. A close that fails (the state journal's last fsync) is the
// executor's failure, exit 1, unless the command already failed: then it is logged and its
// exit code stands (a TERMINATE's 4 is never downgraded).
func closeSession(s *boot.Session, err error) error {
	cerr := s.Close()
	if cerr == nil {
		return err
	}
	s.Log.Error("closing the state failed", zap.Error(cerr))
	if err == nil {
		return exitcode.Errorf(exitcode.Internal, "closing the state: %w", cerr)
	}
	return &exitcode.Error{Code: exitcode.Code(err), Msg: fmt.Sprintf("%v; closing the state: %v", err, cerr), Err: err}
}
