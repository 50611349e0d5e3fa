echo "intentional failure for the demo" >&2
exit 1
