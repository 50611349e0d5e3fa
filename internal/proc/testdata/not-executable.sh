#!/bin/sh
echo "never runs: not executable"
