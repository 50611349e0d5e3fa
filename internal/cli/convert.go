package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/convert"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

const convertExitCodes = `

Exit codes: 0 converted (warnings alone do not fail it), 2 the input cannot be converted
(every problem listed on stderr) or usage.`

func newConvertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert cloudformation|parallelcluster FILE",
		Short: "Write a configuration document from a CloudFormation template or a ParallelCluster configuration",
		Long: `Write the node lifecycle actions document (the JSON aws pcs create-compute-node-group
--node-lifecycle-actions takes, and --config reads) from the configuration you already have.
The document passes validate --api-strict; what does not convert is a warning on stderr.` + convertExitCodes,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			what := "convert needs what to convert from"
			if len(args) > 0 {
				what = fmt.Sprintf("convert %q: unknown source", args[0])
			}
			return exitf(exitcode.Usage, "%s: cloudformation TEMPLATE or parallelcluster CLUSTER.yaml (pcs-lifecycle convert --help)", what)
		},
	}
	cmd.AddCommand(newConvertCloudFormationCmd(), newConvertParallelClusterCmd())
	return cmd
}

func newConvertCloudFormationCmd() *cobra.Command {
	var resource, output string
	var params []string
	cmd := &cobra.Command{
		Use:   "cloudformation TEMPLATE|- [--resource LOGICAL_ID] [--param K=V …] [-o FILE]",
		Short: "The NodeLifecycleActions of an AWS::PCS::ComputeNodeGroup in a CloudFormation or CDK template",
		Long: `Read a CloudFormation template (YAML or JSON, such as cdk synth writes) and write the
NodeLifecycleActions of one AWS::PCS::ComputeNodeGroup resource as a document.

Intrinsic functions are evaluated (!Ref, !Sub, !GetAtt, !If with the template's Conditions,
!Join, !Select, !Split, !FindInMap, !Base64, !ImportValue, and their Fn:: forms). What only
a deployment knows comes from --param:
  --param AWS::Region=us-east-1 --param AWS::AccountId=111122223333   pseudo parameters
  --param AdminBucket=my-bucket          a template parameter (its Default otherwise)
  --param HomeFileSystem=fs-0123…        what !Ref of a resource returns
  --param Scratch.DNSName=fs-0123….fsx…  what !GetAtt Scratch.DNSName returns
  --param Import:shared-bucket=my-bucket what !ImportValue shared-bucket returns
Anything left unresolved is an error naming its template path and the --param to give.` + convertExitCodes,
		Example: `  pcs-lifecycle convert cloudformation cluster.yaml --param AWS::Region=us-east-1 > node-lifecycle-actions.json
  cdk synth -q MyPcsStack | pcs-lifecycle convert cloudformation - --resource ComputeGroup5A6B7C8D --param AWS::AccountId=111122223333`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			values, err := parseParams(params)
			if err != nil {
				return err
			}
			data, name, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			d, err := convert.CloudFormation(data, convert.CloudFormationOptions{Resource: resource, Params: values})
			if err != nil {
				return conversionFailed(name, err)
			}
			printWarnings(cmd.ErrOrStderr(), d.Warnings)
			return writeDocument(cmd, d, output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&resource, "resource", "", "logical ID of the AWS::PCS::ComputeNodeGroup (needed when the template has several)")
	f.StringArrayVar(&params, "param", nil, "K=V: a value only a deployment knows (repeatable; see above)")
	f.StringVarP(&output, "output", "o", "", "write the document to FILE instead of stdout")
	return cmd
}

func newConvertParallelClusterCmd() *cobra.Command {
	var queue, output, outDir, scriptsFrom string
	var everyBoot bool
	cmd := &cobra.Command{
		Use:   "parallelcluster CLUSTER.yaml|- [--queue NAME] [--every-boot=true] [--scripts-from DIR] [-o FILE | --output-dir DIR]",
		Short: "Node lifecycle actions from the CustomActions of a ParallelCluster 3 cluster configuration",
		Long: `Read a ParallelCluster 3 cluster configuration and write, for each Slurm queue with
CustomActions, a document: OnNodeStart becomes nodeBootstrapped and OnNodeConfigured
nodeReady (the Script/Args form and the Sequence form). As ParallelCluster runs them, the
scripts run on every boot (--every-boot=false: the first boot only) and any failure replaces
the node (TERMINATE). What has no equivalent is a warning: OnNodeUpdated, HeadNode and
LoginNodes custom actions, and scripts that read ParallelCluster's own files (give
--scripts-from DIR, the folder holding copies of the scripts, to check them).

One queue converts to stdout (or -o FILE); several need --queue NAME or --output-dir DIR
(one NAME.json per queue).` + convertExitCodes,
		Example: `  pcs-lifecycle convert parallelcluster cluster-config.yaml --queue gpu > gpu.json
  pcs-lifecycle convert parallelcluster cluster-config.yaml --output-dir pcs/ --scripts-from ./scripts`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && outDir != "" {
				return exitf(exitcode.Usage, "-o and --output-dir: give one")
			}
			data, name, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			docs, common, err := convert.ParallelCluster(data, convert.ParallelClusterOptions{Queue: queue, EveryBoot: everyBoot, ScriptsFrom: scriptsFrom})
			if err != nil {
				return conversionFailed(name, err)
			}
			printWarnings(cmd.ErrOrStderr(), common)
			if len(docs) > 1 && outDir == "" {
				var names []string
				for _, d := range docs {
					names = append(names, d.Name)
				}
				return exitf(exitcode.Usage, "%s: %d queues have custom actions (%s): give --queue NAME for one document, or --output-dir DIR for one file per queue",
					name, len(docs), strings.Join(names, ", "))
			}
			for _, d := range docs {
				printWarnings(cmd.ErrOrStderr(), d.Warnings)
				target := output
				if outDir != "" {
					target = filepath.Join(outDir, d.Name+".json")
				}
				if err := writeDocument(cmd, d, target); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&queue, "queue", "", "the Slurm queue to convert (needed with several queues and no --output-dir)")
	f.BoolVar(&everyBoot, "every-boot", true, "run the scripts on every boot, as ParallelCluster does (false: FIRST_BOOT_ONLY, CACHE_ONCE)")
	f.StringVar(&scriptsFrom, "scripts-from", "", "folder holding copies of the scripts, read for ParallelCluster's own files (as try finds them)")
	f.StringVarP(&output, "output", "o", "", "write the document to FILE instead of stdout")
	f.StringVar(&outDir, "output-dir", "", "write one QUEUE.json per queue into DIR")
	return cmd
}

// parseParams reads --param K=V values.
func parseParams(params []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, exitf(exitcode.Usage, "--param %q: must be NAME=VALUE (AWS::Region=us-east-1, Bucket=my-bucket, Resource.Attribute=value)", p)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, exitf(exitcode.Usage, "--param %s given twice (%q and %q)", k, old, v)
		}
		out[k] = v
	}
	return out, nil
}

// readInput reads a file, or "-" for stdin, at most 16 MiB.
func readInput(cmd *cobra.Command, arg string) ([]byte, string, error) {
	const max = 16 << 20
	var r io.Reader
	name := sourceName(arg)
	if arg == Stdin {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(arg)
		if err != nil {
			return nil, name, exitf(exitcode.Usage, "%w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, name, exitf(exitcode.Usage, "%s: %w", name, err)
	}
	if len(data) > max {
		return nil, name, exitf(exitcode.Usage, "%s: larger than %d bytes", name, max)
	}
	return data, name, nil
}

func conversionFailed(name string, err error) error {
	var ce *convert.Error
	if errors.As(err, &ce) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: cannot convert:", name)
		for _, p := range ce.Problems {
			b.WriteString("\n  " + p)
		}
		return exitf(exitcode.Usage, "%s", b.String())
	}
	return exitf(exitcode.Usage, "%s: %w", name, err)
}

func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "pcs-lifecycle: warning: %s\n", s)
	}
}

// writeDocument writes a converted document to stdout, or to a file (then says so on stderr).
func writeDocument(cmd *cobra.Command, d *convert.Document, target string) error {
	if target == "" {
		_, err := cmd.OutOrStdout().Write(d.JSON)
		return err
	}
	if dir := filepath.Dir(target); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return exitf(exitcode.Internal, "%w", err)
		}
	}
	if err := os.WriteFile(target, d.JSON, 0o644); err != nil {
		return exitf(exitcode.Internal, "%w", err)
	}
	n := len(d.Document.Scripts(lifecycle.StageNodeBootstrapped)) + len(d.Document.Scripts(lifecycle.StageNodeReady))
	fmt.Fprintf(cmd.ErrOrStderr(), "pcs-lifecycle: wrote %s (%s from %s)\n", target, plural(n, "script"), d.Name)
	return nil
}
