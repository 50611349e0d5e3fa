#!/bin/sh
# Reports whether stdin gives EOF at once, and what it is.
if read -r line; then echo "read:$line"; else echo eof; fi
readlink /proc/$$/fd/0
