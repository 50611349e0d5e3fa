package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The help every command shows beyond its flags: an example and its exit codes, from one table
// applied to the whole command tree in NewRoot (applyHelp), and every flag's environment
// variable named beside it (from envFlags). A command that sets its own Example or "Exit
// codes:" keeps them.

// helpExamples are the examples, by command path without the program name.
var helpExamples = map[string]string{
	"": `  pcs-lifecycle run --stage nodeBootstrapped --config s3://my-bucket/node-lifecycle-actions.json
  pcs-lifecycle status
  pcs-lifecycle try node-lifecycle-actions.json --scripts-from ./scripts`,
	"run": `  # before slurmd starts, on the instance's first boot (later boots use the cached copy)
  pcs-lifecycle run --stage nodeBootstrapped --config s3://my-bucket/node-lifecycle-actions.json
  # after slurmd started: waits for the node's registration, then runs nodeReady
  pcs-lifecycle run --stage nodeReady
  # a sandbox node, to try a configuration on any Linux machine
  pcs-lifecycle run --root /tmp/node1 --instance-id i-test --boot-id 1 --config my.json --stage nodeBootstrapped`,
	"daemon": `  # pcs-lifecycle.service (Type=notify)
  ExecStart=/usr/bin/pcs-lifecycle daemon --hold-jobs-until-ready
  PCS_LIFECYCLE_CONFIG=s3://my-bucket/node-lifecycle-actions.json pcs-lifecycle daemon`,
	"fetch": `  pcs-lifecycle fetch
  pcs-lifecycle fetch --config s3://my-bucket/node-lifecycle-actions.json --expected-bucket-owner 111122223333`,
	"plan": `  pcs-lifecycle plan                    # this boot
  pcs-lifecycle plan --reboot           # the next boot
  pcs-lifecycle plan --wide | grep ^pending`,
	"status": `  pcs-lifecycle status
  pcs-lifecycle status --wide
  pcs-lifecycle status --json | jq -r '.stages[].scripts[] | select(.state=="failed") | .name'`,
	"validate": `  pcs-lifecycle validate node-lifecycle-actions.json`,
	"wait": `  # in a Slurm prolog: no job before nodeReady finished on this boot
  pcs-lifecycle wait --stage nodeReady --timeout 30m`,
	"version": `  pcs-lifecycle version`,
	"convert": `  pcs-lifecycle convert cloudformation cluster.yaml > node-lifecycle-actions.json`,
	"report":  `  pcs-lifecycle report s3://my-evidence/pcs/ --since 7d`,
}

// Exit codes shared by the commands that run scripts.
const runExitCodes = `Exit codes:
  0        every script succeeded or was skipped
  1        the executor itself failed: lock held too long, disk, state, registration timeout
  2        invalid configuration or command line
  3        a script failed under CONTINUE or STOP_SEQUENCE; the node carries on
  4        a script failed under TERMINATE, or the instance was already marked failed: replace it
  130/143  interrupted by SIGINT/SIGTERM; the running script was stopped and the state saved`

// helpExitCodes are the exit codes, by command path ("" is the program's own help).
var helpExitCodes = map[string]string{
	"":       runExitCodes + "\n  5        status only: nothing has run on this boot, or no configuration is cached",
	"run":    runExitCodes,
	"daemon": runExitCodes,
	"fetch": `Exit codes:
  0  every script downloaded
  1  the executor itself failed (lock, disk, state)
  2  no or invalid configuration, or a bad flag
  3  a download failed`,
	"plan": `Exit codes:
  0  the plan is printed
  1  the state or the cached configuration cannot be read
  2  no configuration (give --config), an invalid one, or a bad flag`,
	"status": `Exit codes (the worst result of the current boot):
  0  every script that ran on this boot succeeded or was skipped
  1  nodeReady did not run: the node did not register with Slurm in time; or the state cannot be read
  3  a script failed under CONTINUE or STOP_SEQUENCE, or a stage is running or was interrupted
  4  the instance was marked failed by a TERMINATE: replace it
  5  nothing has run on this boot, or no configuration was ever cached on this instance`,
	"wait": `Exit codes:
  0        the stage finished with exit 0 on this boot
  3, 4     the stage finished with that code
  1        --timeout passed, or nodeReady did not run (the node did not register)
  130/143  interrupted`,
	"version": `Exit codes:
  0  always`,
	"report": `Exit codes:
  0  the report is printed
  1  the prefix cannot be listed
  2  a bad argument or flag`,
}

// applyHelp gives every command of the tree its example and exit codes, and names each
// flag's environment variable beside it.
func applyHelp(root *cobra.Command) {
	envUsage(root.PersistentFlags())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), root.Name()))
		if c.Example == "" {
			if ex, ok := helpExamples[path]; ok {
				c.Example = ex
			} else if ex, ok := helpExamples[strings.Fields(path + " x")[0]]; ok && path != "" {
				c.Example = ex // a subcommand without its own: its parent's
			}
		}
		if !strings.Contains(c.Long, "Exit codes:") {
			if codes, ok := helpExitCodes[path]; ok {
				long := c.Long
				if long == "" {
					long = c.Short + "."
				}
				c.Long = long + "\n\n" + codes
			}
		}
		envUsage(c.LocalNonPersistentFlags())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// envUsage appends "(env NAME)" to the usage of each flag with an environment fallback that
// does not name it yet.
func envUsage(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if env, ok := envFlags[f.Name]; ok && !strings.Contains(f.Usage, env) {
			f.Usage += " (env " + env + ")"
		}
	})
}
