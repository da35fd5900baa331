#!/usr/bin/env bash
# Main job: builds the native engine and runs the actmem CLI on a worked question.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset native >/dev/null
cmake --build --preset native --target actmem >/dev/null
echo "\$ actmem estimate --preset llama-3.1-70b --seq 8192 --tp 8 --sp --pp 4 --dp 2 --zero 1 --attention flash --recompute selective --gpu h100-80gb"
build/native/actmem estimate --preset llama-3.1-70b --seq 8192 --tp 8 --sp --pp 4 --dp 2 --zero 1 \
  --attention flash --recompute selective --gpu h100-80gb "$@"
