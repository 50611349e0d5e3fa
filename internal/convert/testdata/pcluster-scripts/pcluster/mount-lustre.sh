#!/bin/bash
. /etc/parallelcluster/cfnconfig
mount -t lustre "$1" "$2"
