#!/bin/bash
mkdir -p "$1"
