#!/bin/sh
echo "never runs: saved with Windows line ends"
