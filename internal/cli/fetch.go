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
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := openSession(ctx, o, "fetch")
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.loadConfig(ctx); err != nil {
				return err
			}
			r := s.runner(false)
			if err := r.FetchAll(ctx); err != nil {
				return exitf(exitcode.Internal, "%v", err)
			}
			failed := 0
			for _, st := range lifecycle.Stages {
				for _, sc := range s.doc.Scripts(st) {
					h := s.store.State.Scripts[state.Key(st, sc.Name)]
					ok := h != nil && h.FetchedBoot == s.node.BootID && s.cache.HasScript(sc.Name)
					mark := "ok    "
					if !ok {
						mark, failed = "FAILED", failed+1
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s %s\n", mark, st, sc.Name, sc.ScriptSource.ScriptLocation)
				}
			}
			if failed > 0 {
				return exitf(exitcode.Failed, "%d download(s) failed; see %s", failed, s.layout.ExecutorLog())
			}
			return nil
		},
	}
}
