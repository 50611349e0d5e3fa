#!/bin/sh
# On SIGTERM waits for its child, which must have received SIGTERM too (it is sent to the whole
# group), then exits 0.
sh -c 'trap "echo child got TERM; exit 0" TERM; sleep 30 & wait' &
trap 'wait; echo leader done; exit 0' TERM
echo ready
wait
