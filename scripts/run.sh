#!/usr/bin/env bash
# Main job: builds the page (engine as WebAssembly + static site in dist/, and the single-file
# dist/actmem.html) and serves it on localhost. PORT=8000 by default; Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
export NODE_PATH=/usr/share/nodejs
cmake --preset wasm >/dev/null
cmake --build --preset wasm
port="${PORT:-8000}"
echo
echo "actmem page: http://127.0.0.1:${port}/index.html"
echo "single file (works from file://): $(pwd)/dist/actmem.html"
exec node scripts/serve.mjs dist "$port"
