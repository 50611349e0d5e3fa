#!/bin/bash
set -e
nvidia-smi -pm 1
