#!/bin/sh
# Closes stdout and stderr early, then keeps running.
echo before
exec >&- 2>&-
sleep 1
