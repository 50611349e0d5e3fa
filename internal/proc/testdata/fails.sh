#!/bin/sh
echo "about to fail" >&2
exit 3
