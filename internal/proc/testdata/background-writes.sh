#!/bin/sh
# Exits at once; a background child writes a little later, then exits.
(sleep 0.1; echo late) &
echo early
