#!/bin/sh
# Leaves a background child holding stdout and stderr, prints its PID and exits 0.
sleep 30 &
echo $!
exit 0
