#!/usr/bin/env bash
# The GPU validation run (issue 5): builds actmem-validate with the CUDA executor and runs the grid
# of GPT- and Llama-style configurations, predicted vs measured, into build/gpu-validation/
# (report.jsonl + report.md, the table docs/validation.md takes). Budget: under 5 minutes on one
# H200. Usage: scripts/gpu-validate.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-validation}
mkdir -p "$out"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
# The GPU machine has no Debian packages: a session brings nlohmann's headers and CMake package in
# .dev/usr (../shared/toolchain.md, "The GPU machine"); elsewhere the system's are found.
prefix=()
[ -d .dev/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.dev/usr")
cmake -S . -B build/cuda -DCMAKE_BUILD_TYPE=Release -DACTMEM_CUDA=ON -DACTMEM_TESTS=OFF \
  -DACTMEM_BENCH=OFF -DCMAKE_CUDA_COMPILER="$NVCC" "${prefix[@]}" >/dev/null
cmake --build build/cuda -j"$(nproc)" --target actmem-validate
v=build/cuda/actmem-validate
# The whole script must finish within 5 minutes of device time: runs stop being launched at
# DEADLINE seconds (build included), and each run gets what is left, at most 100 s.
deadline=${DEADLINE:-270}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/device.txt" || true
: > "$out/report.jsonl"
run() {  # name, then actmem-validate flags
  local name=$1; shift
  # ONLY="name ..." runs those alone (to finish a table whose budget ran out)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  local left=$((deadline - SECONDS))
  if [ "$left" -le 5 ]; then
    echo "{\"ok\": false, \"name\": \"$name\", \"error\": \"not run: the 5-minute budget was spent\"}" >> "$out/report.jsonl"
    return
  fi
  [ "$left" -gt 100 ] && left=100
  echo "== $name ($left s left for it)"
  local t0=$SECONDS
  if timeout "$left" "$v" --executor cuda --json "$@" > "$out/$name.json" 2> "$out/$name.err"; then :; fi
  python3 - "$name" "$out/$name.json" "$((SECONDS - t0))" "$*" >> "$out/report.jsonl" <<'PY'
import json, sys
name, path, secs, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
try:
    r = json.load(open(path))
except Exception as e:
    r = {"ok": False, "error": str(e)}
r.update({"name": name, "flags": flags, "seconds": int(secs)})
print(json.dumps(r))
PY
}
gpt=tests/data/validate/gpt-tiny.json
llama=tests/data/validate/llama-tiny.json
# Correctness on small layers: CUDA gradients vs the CPU fp64 reference, every policy.
for pol in none selective full every:2; do
  for att in eager flash; do
    run "small-gpt-$att-$pol-fp32" --model $gpt --seq 16 --micro-batch 2 --dropout 0.1 --attention $att --recompute $pol --dtype fp32
    run "small-llama-$att-$pol-bf16" --model $llama --seq 16 --micro-batch 2 --attention $att --recompute $pol --dtype bf16
  done
done
# Memory at scale: tens of GB (reference off: the CPU would take hours).
# Ordered so the most informative runs come first if the budget runs out.
run "gpt2-medium-eager-none" --preset gpt2-medium --seq 1024 --micro-batch 8 --attention eager --dropout 0.1 --recompute none --reference off
run "llama-2-7b-4L-flash-none" --model tests/data/validate/llama-7b-4layers.json --seq 1024 --micro-batch 16 --attention flash --recompute none --reference off
run "gpt2-medium-eager-selective" --preset gpt2-medium --seq 1024 --micro-batch 8 --attention eager --dropout 0.1 --recompute selective --reference off
run "llama-2-7b-4L-flash-full" --model tests/data/validate/llama-7b-4layers.json --seq 1024 --micro-batch 16 --attention flash --recompute full --reference off
run "gpt2-medium-eager-every4" --preset gpt2-medium --seq 1024 --micro-batch 8 --attention eager --dropout 0.1 --recompute every:4 --reference off
run "llama-2-7b-4L-eager-selective" --model tests/data/validate/llama-7b-4layers.json --seq 1024 --micro-batch 4 --attention eager --recompute selective --reference off
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/report.jsonl")]
def err(r):  # the run's own message, else its stderr (absent for a run never launched)
    if r.get("error") and not r["error"].startswith("Expecting value"):
        return r["error"][:80]
    try:
        return open(f"{out}/{r['name']}.err").read().strip()[:80] or r.get("error", "")[:80]
    except OSError:
        return r.get("error", "")[:80]
with open(f"{out}/report.md", "w") as f:
    f.write("| config | dtype | policy | predicted B | measured B | error % | cudaMemGetInfo B | grads = none | rel err vs fp64 | overhead meas./pred. % | pass |\n|---|---|---|---:|---:|---:|---:|---|---:|---|---|\n")
    for r in rows:
        if not r.get("ok"):
            f.write(f"| {r['name']} | | | | | | | | | | error: {err(r)} |\n")
            continue
        rel = r.get("max_rel_error")
        f.write(f"| {r['name']} | {r['dtype']} | {r['policy']} | {r['predicted_peak_bytes']} | {r['measured_peak_bytes']} | {r['peak_error_pct']:+.3f} | {r['device_used_bytes']} | {r['gradients_match']} | {'' if rel is None else f'{rel:.2e}'} | {r['measured_recompute_overhead_pct']:+.1f} / {r['predicted_recompute_overhead_pct']:+.1f} | {'PASS' if r['passed'] else 'FAIL'} |\n")
print(open(f"{out}/report.md").read())
PY
