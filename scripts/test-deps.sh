#!/usr/bin/env bash
# test-deps.sh: put on this machine what `make test` needs, or stop at once saying how.
#
#   Debian packages   slurmd slurmctld slurm-client munge (the Slurm tests), systemd
#                     (systemd-analyze), rpm (the .rpm checks), man-db (man pcs-lifecycle),
#                     bash-completion (the completion check), gcc (go test -race needs cgo),
#                     systemd-container without its recommends (systemd-nspawn, the boot tests)
#   Go tools          versitygw, amazon-ec2-metadata-mock, nfpm: pinned, built with
#                     `go install` into .tools/ (git-ignored)
#
# Installs what is missing when it runs as root on a machine with apt-get; anywhere else it
# prints the exact command to run and exits 1. `--check` only reports (exit 1 when something is
# missing). The Go tools need no root: they are installed whenever the Go module proxy answers.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=${TOOLS:-$PWD/.tools}
check_only=
[ "${1:-}" = "--check" ] && check_only=1

# Pinned Go tools: binary name, module path, version.
GO_TOOLS=(
  "versitygw github.com/versity/versitygw/cmd/versitygw v1.8.0"
  "ec2-metadata-mock github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock v1.13.0"
  "nfpm github.com/goreleaser/nfpm/v2/cmd/nfpm v2.45.2"
)

# Debian packages: a command each provides (looked up in PATH and the sbin folders), package.
APT=(
  "slurmd slurmd"
  "slurmctld slurmctld"
  "scontrol slurm-client"
  "munged munge"
  "systemd-analyze systemd"
  "rpm rpm"
  "man man-db"
  "/usr/share/bash-completion/bash_completion bash-completion"
  "gcc gcc"
)
# Installed without their recommends (systemd-container would pull in a whole container stack).
APT_NO_RECOMMENDS=(
  "systemd-nspawn systemd-container"
)

have() {
  case $1 in /*) [ -e "$1" ]; return ;; esac
  command -v "$1" >/dev/null 2>&1 && return 0
  local d
  for d in /usr/sbin /sbin /usr/bin /bin; do [ -x "$d/$1" ] && return 0; done
  return 1
}

missing_pkgs() {
  local e
  for e in "$@"; do
    set -- $e
    have "$1" || printf '%s ' "$2"
  done
}

apt_cmd=
pkgs=$(missing_pkgs "${APT[@]}")
pkgs_nr=$(missing_pkgs "${APT_NO_RECOMMENDS[@]}")
if [ -n "$pkgs" ]; then
  apt_cmd="apt-get install -y ${pkgs% }"
fi
if [ -n "$pkgs_nr" ]; then
  apt_cmd="${apt_cmd:+$apt_cmd && }apt-get install -y --no-install-recommends ${pkgs_nr% }"
fi

if [ -n "$apt_cmd" ]; then
  if [ -n "$check_only" ]; then
    echo "test-deps: missing Debian packages: ${pkgs}${pkgs_nr}" >&2
    echo "  install them with: apt-get update && $apt_cmd" >&2
  elif [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    why="not root"
    command -v apt-get >/dev/null || why="no apt-get on this machine"
    echo "test-deps: missing Debian packages: ${pkgs}${pkgs_nr}($why)" >&2
    echo "  run as root on Debian or Ubuntu: apt-get update && $apt_cmd" >&2
    echo "  (elsewhere install the equivalent packages: Slurm's slurmd, slurmctld and client, munge, systemd, rpm, man, bash-completion, gcc, systemd-nspawn)" >&2
    exit 1
  else
    echo "test-deps: installing ${pkgs}${pkgs_nr}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    [ -z "$pkgs" ] || apt-get install -y -qq $pkgs >/dev/null
    [ -z "$pkgs_nr" ] || apt-get install -y -qq --no-install-recommends $pkgs_nr >/dev/null
  fi
fi

go_missing=()
for e in "${GO_TOOLS[@]}"; do
  set -- $e
  [ -x "$TOOLS/$1" ] || go_missing+=("$e")
done
for e in "${go_missing[@]}"; do
  set -- $e
  cmd="GOBIN=$TOOLS go install $2@$3"
  if [ -n "$check_only" ]; then
    echo "test-deps: missing $1: $cmd" >&2
    continue
  fi
  echo "test-deps: $cmd" >&2
  if ! GOBIN=$TOOLS go install "$2@$3"; then
    echo "test-deps: could not build $1; run: $cmd" >&2
    exit 1
  fi
done

if [ -n "$check_only" ] && { [ -n "$apt_cmd" ] || [ ${#go_missing[@]} -gt 0 ]; }; then
  exit 1
fi
exit 0
