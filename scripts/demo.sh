#!/usr/bin/env bash
# make demo: the seed experiment on sandbox nodes (--root) against a local S3 server (versitygw)
# started here: first boot, reboot (CACHE_ONCE, FIRST_BOOT_ONLY vs EVERY_BOOT), STOP_SEQUENCE,
# then `status` of each node. Nothing outside a temp dir is touched; nothing leaves loopback.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$top/bin/pcs-lifecycle}
GW=$(command -v versitygw || echo "$top/.tools/versitygw")
[ -x "$GW" ] || GW="$(go env GOPATH)/bin/versitygw"
[ -x "$GW" ] || { echo "versitygw missing: make tools (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)" >&2; exit 1; }
work=$(mktemp -d /tmp/pcs-demo.XXXXXX)
cleanup() { [ -n "${gwpid:-}" ] && kill "$gwpid" 2>/dev/null; [ -z "${KEEP:-}" ] && rm -rf "$work"; }
trap cleanup EXIT
export AWS_EC2_METADATA_DISABLED=true AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demosecret AWS_REGION=us-east-1
export PCS_LIFECYCLE_DOWNLOAD_BACKOFF=200ms
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
mkdir -p "$work/s3/demo-bucket/scripts"
cp "$top"/testdata/demo/scripts/*.sh "$work/s3/demo-bucket/scripts/"
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY "$GW" --port "127.0.0.1:$port" posix "$work/s3" >"$work/versitygw.log" 2>&1 &
gwpid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port
records=$work/records.log
sed -e "s#@RECORDS@#$records#g" "$top/testdata/demo/config.json" >"$work/config.json"
sed -e "s#@RECORDS@#$records#g" "$top/testdata/demo/stop-sequence.json" >"$work/stop-sequence.json"

node() { # node NAME BOOT CMD...
  local name=$1 boot=$2; shift 2
  "$BIN" "$@" --root "$work/nodes/$name" --node-id "$name" --cluster-name demo --compute-node-group-name demo-cng \
    --instance-id "i-demo-$name" --boot-id "boot-$boot"
}
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
rc() { "$@" && echo "(exit 0)" || echo "(exit $?)"; }

say "node-a, first boot: nodeBootstrapped then nodeReady"
rc node node-a 1 run --stage nodeBootstrapped --config "$work/config.json"
rc node node-a 1 run --stage nodeReady
say "what the next boot would do (plan --reboot)"
node node-a 1 plan --reboot
say "node-a reboots; the scripts are gone from S3 but CACHE_ONCE reuses the cache"
rm -f "$work/s3/demo-bucket/scripts/record-boot.sh"
rc node node-a 2 run --stage nodeBootstrapped
rc node node-a 2 run --stage nodeReady
cp "$top/testdata/demo/scripts/record-boot.sh" "$work/s3/demo-bucket/scripts/"
say "records written by the scripts"
cat "$records"
say "per-script log of record-every-boot"
cat "$work/nodes/node-a/var/log/amazon/pcs/lifecycle/actions/nodeBootstrapped/record-every-boot.log"
say "status of node-a"
rc node node-a 2 status
say "node-b: a script fails under STOP_SEQUENCE (the stage stops, the node carries on, exit 3)"
rc node node-b 1 run --stage nodeBootstrapped --config "$work/stop-sequence.json"
rc node node-b 1 run --stage nodeReady
say "status of node-b"
rc node node-b 1 status
say "executor.log of node-b (JSON lines), the failure"
grep '"level":"ERROR"' "$work/nodes/node-b/var/log/amazon/pcs/lifecycle/actions/executor.log" || true
