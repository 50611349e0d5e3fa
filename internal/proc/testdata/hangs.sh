#!/bin/sh
# Hangs until a timeout or cancellation; SIGTERM has its default effect.
echo started
sleep 30
