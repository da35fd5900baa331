#!/usr/bin/env bash
# Regenerates web/presets.json: the engine's answer to the page's presets request, which the page
# embeds at build time (web/build-app.mjs) so the form fills while the engine compiles. Run after
# changing a preset, a GPU or a request key (the page_presets_current test says when).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset native --target actmem >/dev/null
echo '{"command":"presets"}' | build/native/actmem requests - > web/presets.json
echo "wrote web/presets.json ($(wc -c < web/presets.json) bytes)"
