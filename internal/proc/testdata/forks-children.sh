#!/bin/sh
# Starts children that ignore SIGTERM and hang, prints their PIDs, then waits for them.
for i in 1 2 3 4 5 6 7 8; do
	sh -c "trap '' TERM; exec sleep 30" &
	echo "child $!"
done
echo ready
wait
