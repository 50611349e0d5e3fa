#!/bin/sh
# Writes to stdout and stderr alternately: the order must survive. Then its arguments.
echo out1
echo err1 >&2
echo out2
echo err2 >&2
printf 'args:'
printf '%s|' "$@"
echo
