#!/bin/sh
# Floods its output with $1 bytes (default 100 MiB).
head -c "${1:-104857600}" /dev/zero
