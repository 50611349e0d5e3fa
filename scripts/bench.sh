#!/usr/bin/env bash
# make bench: the workloads of docs/performance.md, each a row with its peer measured in the
# same run (median of ROUNDS), printed as one table. No thresholds: "met" compares with the
# target of issue 10 and is information, not a test.
#   W1  run of N cached no-op scripts vs exec'ing them in a bash loop (executor overhead)
#   W4  the same scripts under cloud-init (installed here if missing and running as root)
#   W2, W3, W5, W6, W7: internal/perf at full size (PCS_BENCH=1), against the real parts
#   R   issue 11's `report` over 10,000 evidence summaries (REPORT_N)
# Environment: BIN (default bin/pcs-lifecycle), N (20), ROUNDS (15 here, 10 in internal/perf),
# PERF_RUN (go test -run pattern, default all of internal/perf), REPORT (keep the rows as JSON
# lines in this file).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$top/bin/pcs-lifecycle}
N=${N:-20}
ROUNDS=${ROUNDS:-15}
work=$(mktemp -d /tmp/pcs-bench.XXXXXX)
trap '[ -n "${gwpid:-}" ] && kill $gwpid 2>/dev/null; rm -rf "$work"' EXIT
export AWS_EC2_METADATA_DISABLED=true AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
rows=${REPORT:-$work/rows.jsonl}
: >"$rows"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
bench_t0=$SECONDS

# row WORKLOAD MEASURE VALUE UNIT [PEER PEER_VALUE TARGET MET NOTE]
row() {
  python3 - "$rows" "$@" <<'PY'
import json, sys
path, w, m, v, u, *rest = sys.argv[1:]
rest += [""] * (5 - len(rest))
peer, pv, target, met, note = rest
r = {"workload": w, "measure": m, "value": float(v) if v not in ("", "n/a") else None, "unit": u, "rounds": 0}
if peer: r["peer"] = peer
if pv: r["peer_value"] = float(pv); r["ratio"] = r["value"] / float(pv) if r["value"] is not None and float(pv) else None
if target: r["target"] = target
if met: r["met"] = met == "true"
if note: r["note"] = note
open(path, "a").write(json.dumps(r) + "\n")
PY
}

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

# median_pair CMD1… -- CMD2…: both medians (ms), the two commands run in turn each round, so a
# change of the machine's load touches both alike
median_pair() {
  python3 - "$ROUNDS" "$@" <<'PY'
import subprocess, sys, time, statistics
rounds = int(sys.argv[1]); args = sys.argv[2:]; i = args.index("--"); cmds = [args[:i], args[i + 1:]]
ts = [[], []]
for r in range(rounds):
    for j, cmd in enumerate(cmds):
        c = [a.replace("{}", str(r)) for a in cmd]
        t = time.perf_counter(); subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); ts[j].append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(ts[0]):.2f} {statistics.median(ts[1]):.2f}")
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
node() { "$BIN" "$@" --root "$work/node" --instance-id i-bench --node-id bench; }
node run --stage nodeBootstrapped --config "$work/cfg.json" --boot-id warm >/dev/null 2>&1

read -r run direct < <(median_pair "$BIN" run --stage nodeBootstrapped --root "$work/node" --instance-id i-bench --node-id bench --boot-id "b{}" \
  -- bash -c 'for f in '"$work"'/direct/*.sh; do "$f"; done')
version=$(median_ms "$BIN" version)
per=$(python3 -c "print(f'{($run - $direct) / $N:.3f}')")
row W1 "run, $N cached no-op scripts (EVERY_BOOT)" "$run" ms "bash loop exec'ing them" "$direct"
row W1 "  overhead per script above direct exec" "$per" ms "" "" "" "" "process start included once ($version ms)"

# W4: cloud-init on the same scripts. Installed here when missing (Debian/Ubuntu, as root).
if ! /usr/bin/python3 -c 'import cloudinit.util' 2>/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "bench: installing cloud-init for W4 (apt-get install cloud-init)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cloud-init >/dev/null 2>&1 || true
fi
if /usr/bin/python3 -c 'import cloudinit.util' 2>/dev/null; then
  read -r ci run2 < <(median_pair /usr/bin/python3 -c 'import sys; from cloudinit import util; util.runparts(sys.argv[1])' "$work/direct" \
    -- "$BIN" run --stage nodeBootstrapped --root "$work/node" --instance-id i-bench --node-id bench --boot-id "c{}")
  row W4 "cloud-init's runparts, the same $N scripts" "$ci" ms "pcs-lifecycle run, in turn" "$run2"
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
    row W4 "cloud-init single --name scripts_user, same $N scripts" "$cis" ms "pcs-lifecycle run (W1)" "$run"
  fi
else
  row W4 "cloud-init's runparts, the same $N scripts" n/a ms "" "" "" "" "cloud-init not installed (run as root to install it)"
fi

cfg 1 EVERY_BOOT >"$work/cfg1.json"
read -r dlN dl1 < <(median_pair "$BIN" fetch --root "$work/dl" --config "$work/cfg.json" --instance-id "i-dl{}" --boot-id b1 \
  -- "$BIN" fetch --root "$work/dl1" --config "$work/cfg1.json" --instance-id "i-dl{}" --boot-id b1)
row W2 "fetch $N tiny scripts on a new instance, no added latency" "$dlN" ms "fetch 1 script" "$dl1"
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
note=$(python3 - "$work/report.json" "$REPORT_N" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
fails = sum(x["failures"] for x in r["scripts"])
ok = r["summaries"] == n and fails == len(range(0, n, 7)) and not r["skipped"]
print("one run; counts right" if ok else "one run; COUNTS WRONG")
PY
)
row R "report over $REPORT_N evidence summaries (issue 11)" "$(python3 -c "print(f'{($t1 - $t0) * 1000:.0f}')")" ms "" "" "" "" "$note"
kill "$gwpid" 2>/dev/null || true; gwpid=

# W2, W3, W5, W6, W7 at full size against the real parts (internal/perf).
echo "bench: internal/perf at full size (PCS_BENCH=1); this takes a few minutes" >&2
(cd "$top" && PCS_BENCH=1 PCS_BENCH_REPORT="$rows" PCS_LIFECYCLE_BIN="$BIN" \
  go test -count=1 -v -timeout 15m -run "${PERF_RUN:-.}" ./internal/perf/ >"$work/perf.log" 2>&1) || {
  cp "$work/perf.log" /tmp/pcs-bench-perf.log
  echo "bench: internal/perf failed (whole output: /tmp/pcs-bench-perf.log):" >&2
  grep -E -- '--- FAIL|Error Trace|Error:|Messages:|^\s+[a-z_]+_test.go:[0-9]+: ' "$work/perf.log" | grep -v ': W[0-9]' | head -40 >&2
  exit 1; }

python3 - "$rows" "$started" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$((SECONDS - bench_t0))" "$(nproc)" "$(uname -srm)" <<'PY'
import json, sys
path, started, load0, load1, secs, cores, kernel = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
order = {"W1": 1, "W2": 2, "W3": 3, "W4": 4, "W5": 5, "W6": 6, "W7": 7, "R": 8}
rows.sort(key=lambda r: order.get(r["workload"], 9))  # stable: each workload's rows keep their order
print(f"\npcs-lifecycle benchmarks, {started}, {kernel}, {cores} cores; load average {load0} at the start, {load1} at the end; {secs} s")
fmt = "{:<3} {:<58} {:>10} {:<4} {:<36} {:>9} {:>7}  {:<26} {}"
print(fmt.format("", "measure", "value", "", "peer", "peer", "ratio", "target (met?)", "note"))
def num(v):
    return "n/a" if v is None else (f"{v:.2f}" if abs(v) < 1000 else f"{v:.0f}")
for r in rows:
    met = r.get("met")
    t = r.get("target", "")
    if t and met is not None:
        t += " (yes)" if met else " (NO)"
    print(fmt.format(r["workload"], r["measure"][:58], num(r.get("value")), r.get("unit", ""), r.get("peer", "")[:36],
                     num(r.get("peer_value")) if "peer_value" in r else "", f"{r['ratio']:.2f}" if r.get("ratio") else "", t, r.get("note", "")))
PY
