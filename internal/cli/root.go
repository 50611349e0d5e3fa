// Package cli is the pcs-lifecycle command line: one constructor per command, the flags and
// their PCS_* environment fallbacks, the exit codes; it wires the other packages together.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
)

// Build information, set by the linker (make build).
var (
	Version = "dev"
	Commit  = "unknown"
)

// SignalCause is the cancel cause of the command context when a signal arrived.
type SignalCause = exitcode.SignalCause

// ExitError is the CLI's name for exitcode.Error, the one error type carrying an exit code.
type ExitError = exitcode.Error

// exitf is exitcode.Errorf: an exit code with a message (%w keeps the cause).
func exitf(code int, format string, a ...any) error { return exitcode.Errorf(code, format, a...) }

// interruptCode is the exit code of a run stopped by the signal that cancelled ctx (130/143).
func interruptCode(ctx context.Context) int { return exitcode.Interrupted(ctx) }

// causeOf says why ctx ended ("received terminated").
func causeOf(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

// Options are the global flags.
type Options struct {
	Root             string
	Config           string
	LogLevel         string
	LockTimeout      time.Duration
	DownloadAttempts int
	DownloadBackoff  time.Duration
	// ExpectedBucketOwner is sent with every S3 GetObject (S3's ExpectedBucketOwner).
	ExpectedBucketOwner string

	NodeID, ClusterID, ClusterName, CNGID, CNGName, InstanceID, BootID string
}

// envFlags maps flag names to their environment fallbacks.
var envFlags = map[string]string{
	"node-id":                 "PCS_NODE_ID",
	"cluster-id":              "PCS_CLUSTER_ID",
	"cluster-name":            "PCS_CLUSTER_NAME",
	"compute-node-group-id":   "PCS_COMPUTE_NODE_GROUP_ID",
	"compute-node-group-name": "PCS_COMPUTE_NODE_GROUP_NAME",
	"instance-id":             "PCS_INSTANCE_ID",
	"boot-id":                 "PCS_BOOT_ID",
	"download-backoff":        "PCS_LIFECYCLE_DOWNLOAD_BACKOFF",
	"download-attempts":       "PCS_LIFECYCLE_DOWNLOAD_ATTEMPTS",
	"root":                    "PCS_LIFECYCLE_ROOT",
	"config":                  "PCS_LIFECYCLE_CONFIG",
	"log-level":               "PCS_LIFECYCLE_LOG_LEVEL",
	"lock-timeout":            "PCS_LIFECYCLE_LOCK_TIMEOUT",
	"expected-bucket-owner":   "PCS_LIFECYCLE_EXPECTED_BUCKET_OWNER",
	"registration-poll":       "PCS_LIFECYCLE_REGISTRATION_POLL",
	"metrics-textfile":        "PCS_LIFECYCLE_METRICS_TEXTFILE",
	"evidence-uri":            "PCS_LIFECYCLE_EVIDENCE_URI",
	"evidence-on":             "PCS_LIFECYCLE_EVIDENCE_ON",
	"evidence-timeout":        "PCS_LIFECYCLE_EVIDENCE_TIMEOUT",
	"evidence-redact":         "PCS_LIFECYCLE_EVIDENCE_REDACT",
	"evidence-sse":            "PCS_LIFECYCLE_EVIDENCE_SSE",
	"evidence-sse-kms-key-id": "PCS_LIFECYCLE_EVIDENCE_SSE_KMS_KEY_ID",
}

// NewRoot builds the root command.
func NewRoot() *cobra.Command {
	o := &Options{}
	root := &cobra.Command{
		Use:           "pcs-lifecycle",
		Short:         "Run a compute node's lifecycle scripts at nodeBootstrapped and nodeReady",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags())
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&o.Root, "root", "/", "prefix of every path (a sandbox node)")
	pf.StringVar(&o.Config, "config", "", "configuration document: a file, s3://, https://, or - for stdin (default: the cached copy)")
	pf.StringVar(&o.LogLevel, "log-level", "info", "executor.log level: debug, info, warn, error")
	pf.DurationVar(&o.LockTimeout, "lock-timeout", 30*time.Second, "how long to wait for another executor's lock")
	pf.IntVar(&o.DownloadAttempts, "download-attempts", 3, "tries per download")
	pf.DurationVar(&o.DownloadBackoff, "download-backoff", 5*time.Second, "first wait between download tries (doubles, with jitter)")
	pf.StringVar(&o.ExpectedBucketOwner, "expected-bucket-owner", "", "AWS account ID that must own every s3:// bucket (S3 ExpectedBucketOwner; PCS_LIFECYCLE_EXPECTED_BUCKET_OWNER)")
	pf.StringVar(&o.NodeID, "node-id", "", "Slurm node name (PCS_NODE_ID; default: the short hostname)")
	pf.StringVar(&o.ClusterID, "cluster-id", "", "PCS cluster id (PCS_CLUSTER_ID)")
	pf.StringVar(&o.ClusterName, "cluster-name", "", "PCS cluster name (PCS_CLUSTER_NAME)")
	pf.StringVar(&o.CNGID, "compute-node-group-id", "", "compute node group id (PCS_COMPUTE_NODE_GROUP_ID)")
	pf.StringVar(&o.CNGName, "compute-node-group-name", "", "compute node group name (PCS_COMPUTE_NODE_GROUP_NAME)")
	pf.StringVar(&o.InstanceID, "instance-id", "", "EC2 instance id (PCS_INSTANCE_ID; default: IMDS, else /etc/machine-id)")
	pf.StringVar(&o.BootID, "boot-id", "", "boot id (PCS_BOOT_ID; default: /proc/sys/kernel/random/boot_id)")

	root.AddCommand(newRunCmd(o), newFetchCmd(o), newPlanCmd(o), newStatusCmd(o),
		newValidateCmd(o), newVersionCmd(), newDaemonCmd(o), newWaitCmd(o), newTryCmd(o), newConvertCmd())
	root.AddCommand(newReportCmd(o))
	applyHelp(root)
	return root
}

func applyEnv(fs *pflag.FlagSet) error {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		env, ok := envFlags[f.Name]
		if !ok || f.Changed {
			return
		}
		if v, ok := os.LookupEnv(env); ok && v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %v", env, v, err))
			}
		}
	})
	if len(errs) > 0 {
		return exitcode.Errorf(exitcode.Usage, "%s", strings.Join(errs, "; "))
	}
	return nil
}

// Execute runs the command line and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		if msg := ee.Error(); msg != "" {
			fmt.Fprintln(stderr, "pcs-lifecycle: "+msg)
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "pcs-lifecycle: "+err.Error())
	// cobra's own errors (unknown command or flag, bad argument) are usage errors.
	return exitcode.Usage
}
