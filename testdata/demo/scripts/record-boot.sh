#!/bin/bash
# Appends one line per run to the file named by $2 (scripts run in a clean environment, so
# the demo passes the path as an argument) and says what it recorded.
set -euo pipefail
LABEL="${1:-unknown}"
OUT="${2:-/dev/stdout}"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) label=${LABEL} first_boot=${PCS_IS_FIRST_BOOT} node=${PCS_NODE_ID} stage=${PCS_LIFECYCLE_STAGE}" >>"$OUT"
echo "recorded ${LABEL}"
