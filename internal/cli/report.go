package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/evidence"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
)

func newReportCmd(o *Options) *cobra.Command {
	var asJSON bool
	var since, cluster, group, instance string
	var conc int
	cmd := &cobra.Command{
		Use:   "report s3://bucket/prefix/ [--since D] [--cluster ID] [--node-group ID] [--instance ID] [--json]",
		Short: "A fleet's failures per stage and script, from the evidence summaries under an S3 prefix",
		Long: `report lists the <boot-id>.json summaries the evidence bundles left under the prefix
(--evidence-uri), reads them concurrently (never the tarballs) and prints, per stage and
script: failures, nodes affected, first and last seen, the most common exit code and the last
log line of the latest failure. An object that is too large or not a valid summary is skipped
and named; it never stops the report. Exit 0 once the report is printed, 1 when the prefix
cannot be listed.`,
		Example: `  pcs-lifecycle report s3://my-evidence/pcs/ --since 7d
  pcs-lifecycle report s3://my-evidence/pcs/ --cluster pcs_abc123 --node-group pcs_def456 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := evidence.ParseURI(args[0])
			if err != nil {
				return exitf(exitcode.Usage, "%w", err)
			}
			ro := evidence.ReportOptions{Location: loc, Cluster: cluster, NodeGroup: group, Instance: instance,
				Concurrency: conc, ExpectedBucketOwner: o.ExpectedBucketOwner}
			if since != "" {
				if ro.Since, err = evidence.ParseSince(since, time.Now().UTC()); err != nil {
					return exitf(exitcode.Usage, "%w", err)
				}
			}
			if conc < 0 || conc > 256 {
				return exitf(exitcode.Usage, "--concurrency %d: must be 1 to 256", conc)
			}
			ctx := cmd.Context()
			client, err := source.NewS3Client(ctx)
			if err != nil {
				return exitf(exitcode.Internal, "%w", err)
			}
			rep, err := evidence.BuildReport(ctx, client, ro)
			if err != nil {
				return exitf(exitcode.Internal, "%w", err)
			}
			if asJSON {
				return evidence.WriteReportJSON(cmd.OutOrStdout(), rep)
			}
			return evidence.WriteReportText(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "only bundles made since: a duration (36h, 7d), an RFC 3339 time or a date")
	f.StringVar(&cluster, "cluster", "", "only this cluster ID")
	f.StringVar(&group, "node-group", "", "only this compute node group ID")
	f.StringVar(&instance, "instance", "", "only this instance ID")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (every script, failed or not)")
	f.IntVar(&conc, "concurrency", evidence.DefaultConcurrency, "summaries read at once")
	return cmd
}
