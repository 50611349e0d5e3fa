#!/bin/bash
echo "ready-check on node ${PCS_NODE_ID} (cluster ${PCS_CLUSTER_NAME})"
command -v scontrol >/dev/null && echo "scontrol is available" || echo "no scontrol on this machine"
