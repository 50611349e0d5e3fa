#!/bin/sh
# slurm-prolog.sh: a Slurm Prolog that keeps jobs off a compute node until pcs-lifecycle's
# nodeReady stage has finished on this boot.
#
# slurmd registers the node with slurmctld before nodeReady runs (nodeReady needs the node
# registered, SPEC §8), so without this prolog the scheduler may start a job on the node while
# nodeReady scripts still configure it. This prolog runs before every job on the node and
# blocks in `pcs-lifecycle wait --stage nodeReady` until the stage finished:
#
#   pcs-lifecycle wait exit   prolog exit   what Slurm does
#   0  all succeeded            0           the job starts
#   3  CONTINUE/STOP_SEQUENCE   0           the job starts (the node carries on, SPEC §7; the
#      failures                             failure is in `pcs-lifecycle status` and the Comment)
#   4  TERMINATE                1           prolog failure: slurmctld drains the node (reason
#                                           "Prolog error") and requeues the batch job held
#                                           (launch_failed_requeued_held; `scontrol release
#                                           JOBID` lets it run elsewhere); an salloc/srun job
#                                           is cancelled
#   1  timeout, or the          1           the same: no job starts before nodeReady is done
#      executor failed
#   other                       1           the same
#
# A node without pcs-lifecycle installed has nothing to wait for: the prolog exits 0 there,
# so the same Prolog can be configured for a whole cluster.
#
# Installation (on every compute node, and slurm.conf on the controller):
#   install -m 0755 scripts/slurm-prolog.sh /etc/slurm/prolog.d/50-pcs-lifecycle.sh
#   # slurm.conf:
#   Prolog=/etc/slurm/prolog.d/*           # or Prolog=/path/to/slurm-prolog.sh
#   PrologFlags=Alloc                      # run it when the allocation is made, on every node
#                                          # of the job, also for salloc/srun jobs; squeue
#                                          # shows the job R meanwhile, but its script starts
#                                          # only once the prolog exited 0
#   scontrol reconfigure
# Slurm runs the Prolog as root (SlurmdUser) with its own small environment; this script sets
# PATH itself. A Prolog that outlives PrologEpilogTimeout (unlimited by default) is killed and
# counts as failed: keep it above the timeout below.
#
# Tuning (read here, since the Prolog does not get slurmd's environment):
#   PCS_LIFECYCLE_PROLOG_TIMEOUT   how long to wait (a Go duration), default 30m: the registration
#                                  budget of a PCS node. Taken from the environment, else from
#                                  /etc/sysconfig/pcs-lifecycle or /etc/default/pcs-lifecycle.
#   PCS_LIFECYCLE                  the executor, default /usr/bin/pcs-lifecycle.
#
# Messages go to syslog/the journal (tag pcs-lifecycle-prolog) and to stderr (slurmd's log at
# debug level).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

PCS_LIFECYCLE=${PCS_LIFECYCLE:-/usr/bin/pcs-lifecycle}

log() {
	logger -t pcs-lifecycle-prolog -- "$*" 2>/dev/null || :
	printf 'pcs-lifecycle-prolog: %s\n' "$*" >&2
}

# setting NAME: the value of NAME=... in the executor's environment files, quotes removed.
setting() {
	for f in /etc/sysconfig/pcs-lifecycle /etc/default/pcs-lifecycle; do
		[ -r "$f" ] || continue
		v=$(sed -n "s/^[[:space:]]*\\(export[[:space:]]\\{1,\\}\\)\\{0,1\\}$1=//p" "$f" | tail -n 1)
		v=${v#\"}; v=${v%\"}; v=${v#\'}; v=${v%\'}
		if [ -n "$v" ]; then
			printf '%s\n' "$v"
			return 0
		fi
	done
	return 1
}

timeout=${PCS_LIFECYCLE_PROLOG_TIMEOUT:-$(setting PCS_LIFECYCLE_PROLOG_TIMEOUT || echo 30m)}
job=${SLURM_JOB_ID:-?}

if [ ! -x "$PCS_LIFECYCLE" ]; then
	# Not a pcs-lifecycle node: nothing to wait for.
	exit 0
fi

"$PCS_LIFECYCLE" wait --stage nodeReady --timeout "$timeout"
rc=$?
case $rc in
0)
	exit 0
	;;
3)
	log "job $job: nodeReady finished with failures under CONTINUE/STOP_SEQUENCE (exit 3); the node carries on"
	exit 0
	;;
4)
	log "job $job: refused: a lifecycle script failed under TERMINATE (exit 4); the node must be replaced"
	exit 1
	;;
1)
	log "job $job: refused: nodeReady not finished within $timeout, or pcs-lifecycle failed (exit 1)"
	exit 1
	;;
*)
	log "job $job: refused: pcs-lifecycle wait exited $rc"
	exit 1
	;;
esac
