#!/usr/bin/env bash
# Usage: ci/timed.sh NAME COMMAND...  Runs COMMAND and prints how long it took.
name=$1; shift
start=$(date +%s)
"$@"; status=$?
echo "[timing] ${name}: $(( $(date +%s) - start )) s"
exit $status
