#!/bin/sh
# Ignores SIGTERM (and so does sleep, which inherits the ignored disposition): only SIGKILL ends it.
trap '' TERM
echo started
sleep 30
