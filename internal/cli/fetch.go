package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func newFetchCmd(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "fetch",
		Short: "Download (or refresh) every script into the cache, concurrently",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			s, err := openSession(ctx, cmd, o, "fetch")
			if err != nil {
				return err
			}
			defer func() { err = closeSession(s, err) }()
			if err := s.LoadConfig(ctx); err != nil {
				return err
			}
			r := s.Runner(false)
			if err := r.FetchAll(ctx); err != nil {
				return exitcode.Wrap(exitcode.Internal, err)
			}
			failed := 0
			for _, st := range lifecycle.Stages {
				for _, sc := range s.Doc.Scripts(st) {
					h := s.Store.State.Scripts[state.Key(st, sc.Name)]
					ok := h != nil && h.FetchedBoot == s.Node.BootID && s.Cache.HasScript(sc.Name)
					mark := "ok    "
					if !ok {
						mark, failed = "FAILED", failed+1
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s %s\n", mark, st, sc.Name, sc.ScriptSource.ScriptLocation)
				}
			}
			if failed > 0 {
				return exitcode.Errorf(exitcode.Failed, "%d download(s) failed; see %s", failed, s.Layout.ExecutorLog())
			}
			return nil
		},
	}
}
