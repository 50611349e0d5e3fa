#!/usr/bin/env bash
# make bench: wall-time figures of the built binary, printed as a table (no thresholds).
#   1. `run` of N cached no-op scripts (EVERY_BOOT, a new boot each round) vs exec'ing them directly
#   2. `status` and `status --json` on that node
#   3. cloud-init running the same scripts (`cloud-init single --name scripts_user`, with
#      CLOUD_INIT=1; and its util.runparts alone), when cloud-init is installed
#   4. first-boot download of N scripts from S3 (versitygw) concurrently vs one script
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$top/bin/pcs-lifecycle}
N=${N:-20}
ROUNDS=${ROUNDS:-15}
work=$(mktemp -d /tmp/pcs-bench.XXXXXX)
trap '[ -n "${gwpid:-}" ] && kill $gwpid 2>/dev/null; rm -rf "$work"' EXIT
export AWS_EC2_METADATA_DISABLED=true AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1

# median wall time in ms of a command over ROUNDS runs; "{}" in the command is the round number
median_ms() {
  python3 - "$ROUNDS" "$@" <<'PY'
import subprocess, sys, time, statistics
rounds = int(sys.argv[1]); cmd = sys.argv[2:]
ts = []
for i in range(rounds):
    c = [a.replace("{}", str(i)) for a in cmd]
    t = time.perf_counter(); subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); ts.append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(ts):.2f}")
PY
}

GW=$(command -v versitygw || echo "$top/.tools/versitygw"); [ -x "$GW" ] || GW="$(go env GOPATH)/bin/versitygw"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
mkdir -p "$work/s3/bench/s" "$work/direct"
for i in $(seq 1 "$N"); do printf '#!/bin/sh\n:\n' >"$work/s3/bench/s/noop$i.sh"; cp "$work/s3/bench/s/noop$i.sh" "$work/direct/"; done
chmod 0700 "$work"/direct/*.sh
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY "$GW" --port "127.0.0.1:$port" posix "$work/s3" >/dev/null 2>&1 &
gwpid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port

cfg() { # cfg COUNT POLICY
  python3 - "$1" "$2" <<'PY'
import json, sys
n, pol = int(sys.argv[1]), sys.argv[2]
print(json.dumps({"stages": {"nodeBootstrapped": [
  {"name": f"noop{i}", "scriptSource": {"scriptLocation": f"s3://bench/s/noop{i}.sh"}, "executionPolicy": pol, "onError": "CONTINUE"}
  for i in range(1, n + 1)]}}))
PY
}
cfg "$N" EVERY_BOOT >"$work/cfg.json"
cfg 1 EVERY_BOOT >"$work/cfg1.json"
node() { "$BIN" "$@" --root "$work/node" --instance-id i-bench --node-id bench; }
node run --stage nodeBootstrapped --config "$work/cfg.json" --boot-id warm >/dev/null

direct=$(median_ms bash -c 'for f in '"$work"'/direct/*.sh; do "$f"; done')
run=$(median_ms "$BIN" run --stage nodeBootstrapped --root "$work/node" --instance-id i-bench --node-id bench --boot-id "b{}")
status=$(median_ms "$BIN" status --root "$work/node" --instance-id i-bench --boot-id b0)
statusj=$(median_ms "$BIN" status --json --root "$work/node" --instance-id i-bench --boot-id b0)
version=$(median_ms "$BIN" version)

# first boot downloads: N scripts vs 1 (each on a new instance, so nothing is cached)
dlN=$(median_ms "$BIN" fetch --root "$work/dl" --config "$work/cfg.json" --instance-id "i-dl{}" --boot-id b1)
dl1=$(median_ms "$BIN" fetch --root "$work/dl1" --config "$work/cfg1.json" --instance-id "i-dl{}" --boot-id b1)

ci="n/a (cloud-init not installed)"
cis="n/a (set CLOUD_INIT=1: sets up a NoCloud instance in /var/lib/cloud)"
if /usr/bin/python3 -c 'import cloudinit.util' 2>/dev/null; then
  ci=$(median_ms /usr/bin/python3 -c 'import sys; from cloudinit import util; util.runparts(sys.argv[1])' "$work/direct")
  if [ -n "${CLOUD_INIT:-}" ]; then
    # cloud-init's own path for user scripts: `cloud-init single --name scripts_user` runs
    # /var/lib/cloud/instance/scripts/*, as the final stage of every boot does.
    mkdir -p /var/lib/cloud/seed/nocloud
    printf 'instance-id: i-bench\nlocal-hostname: bench\n' >/var/lib/cloud/seed/nocloud/meta-data
    printf '#cloud-config\n{}\n' >/var/lib/cloud/seed/nocloud/user-data
    [ -d /var/lib/cloud/instance/scripts ] || cloud-init init --local >/dev/null 2>&1 || true
    mkdir -p /var/lib/cloud/instance/scripts
    rm -f /var/lib/cloud/instance/scripts/*
    cp "$work"/direct/*.sh /var/lib/cloud/instance/scripts/
    cis=$(median_ms cloud-init single --name scripts_user --frequency always)
  fi
fi

printf '\n%-58s %12s\n' "measure (median of $ROUNDS)" "ms"
printf '%-58s %12s\n' "exec $N no-op scripts directly (bash loop)" "$direct"
printf '%-58s %12s\n' "pcs-lifecycle run, $N cached no-op scripts (EVERY_BOOT)" "$run"
python3 - "$run" "$direct" "$version" "$N" <<'PY'
import sys
run, direct, version, n = map(float, sys.argv[1:])
print(f"{'  overhead per script above direct exec':58s} {(run - direct) / n:12.2f}")
print(f"{'  overhead per script, less process start (version)':58s} {(run - direct - version) / n:12.2f}")
PY
printf '%-58s %12s\n' "cloud-init single --name scripts_user, same $N scripts" "$cis"
printf '%-58s %12s\n' "  (its runparts alone, no cloud-init start-up)" "$ci"
printf '%-58s %12s\n' "pcs-lifecycle status" "$status"
printf '%-58s %12s\n' "pcs-lifecycle status --json" "$statusj"
printf '%-58s %12s\n' "pcs-lifecycle version (process start)" "$version"
printf '%-58s %12s\n' "fetch $N scripts from S3 on a new instance" "$dlN"
printf '%-58s %12s\n' "fetch 1 script from S3 on a new instance" "$dl1"

# --- issue 11: `report` over 10,000 evidence summaries (REPORT_N) on this versitygw ---------------
# The summaries are written straight into the posix backend's folder (a bucket is a folder), as
# 10,000 nodes' bundles would leave them: 4 clusters x 5 node groups, 10 scripts each, some
# failures. Then one `report` over the whole prefix, timed, and its counts checked.
REPORT_N=${REPORT_N:-10000}
python3 - "$work/s3/fleet/pcs" "$REPORT_N" <<'PY'
import json, os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(11)
for i in range(n):
    c, g, inst, boot = f"pcs_c{i % 4}", f"pcs_g{i % 5}", f"i-{i:017x}", f"{rnd.getrandbits(128):032x}"
    scripts = []
    for k in range(10):
        failed = k == 3 and i % 7 == 0
        scripts.append({"stage": "nodeBootstrapped" if k < 6 else "nodeReady", "name": f"script-{k}",
                        "state": "failed" if failed else "succeeded", "on_error": "TERMINATE" if failed else "CONTINUE",
                        "execution_policy": "EVERY_BOOT", "exit_code": 32 if failed else 0,
                        "started_at": f"2026-11-{1 + i % 28:02d}T10:00:00Z", "duration_ms": 1200, "runs": 1,
                        "failures": 1 if failed else 0, "last_log_line": "mount: /fsx: no such device" if failed else "ok"})
    s = {"schema_version": 1, "cluster_id": c, "compute_node_group_id": g, "instance_id": inst, "boot_id": boot,
         "first_boot": True, "uploaded_at": f"2026-11-{1 + i % 28:02d}T10:00:05Z", "trigger": "always",
         "stage": "nodeReady", "exit_code": 4 if i % 7 == 0 else 0, "instance_failed": i % 7 == 0, "version": "bench",
         "bundle_key": f"pcs/{c}/{g}/{inst}/{boot}.tar.gz", "stages": [], "scripts": scripts}
    d = os.path.join(root, c, g, inst)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, boot + ".json"), "w") as f:
        f.write(json.dumps(s, separators=(",", ":")) + "\n")
PY
t0=$(date +%s.%N)
"$BIN" report s3://fleet/pcs/ --json >"$work/report.json"
t1=$(date +%s.%N)
python3 - "$work/report.json" "$REPORT_N" "$t0" "$t1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2]); secs = float(sys.argv[4]) - float(sys.argv[3])
fails = sum(x["failures"] for x in r["scripts"])
ok = r["summaries"] == n and fails == len(range(0, n, 7)) and not r["skipped"]
print(f"{'report over ' + str(n) + ' summaries (one run, seconds)':58s} {secs:12.2f}" + ("" if ok else "  COUNTS WRONG"))
PY
