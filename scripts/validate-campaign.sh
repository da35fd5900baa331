#!/usr/bin/env bash
# The validator's recorded campaign (issue 12, docs/validation.md §5): the CPU executor over a grid
# reaching s = 128, h = 256 and 8 layers, both families (GPT: LayerNorm, GELU, biases; Llama:
# RMSNorm, SwiGLU, RoPE, GQA), eager and flash, every policy, fp32 measured against fp64 and finite
# differences. Too slow for CI (about half an hour on one core); CI runs tests/executor/test_executor.cpp's
# subset. Usage: scripts/validate-campaign.sh [OUT_DIR]  (writes campaign.jsonl and prints a table)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/validate-campaign}
mkdir -p "$out"
cmake --preset native >/dev/null && cmake --build --preset native --target actmem-validate >/dev/null
v=build/native/actmem-validate
model() {  # family layers hidden heads kv ffn -> a model file
  local f="$out/$1-L$2-h$3.json"
  if [ "$1" = gpt ]; then
    printf '{"num_hidden_layers":%s,"hidden_size":%s,"num_attention_heads":%s,"intermediate_size":%s,"vocab_size":256,"max_position_embeddings":128,"ffn_type":"gelu","norm_type":"layernorm","position_embedding":"learned","qkv_bias":true}' "$2" "$3" "$4" "$6" > "$f"
  else
    printf '{"num_hidden_layers":%s,"hidden_size":%s,"num_attention_heads":%s,"num_key_value_heads":%s,"intermediate_size":%s,"vocab_size":256,"max_position_embeddings":128,"ffn_type":"swiglu","norm_type":"rmsnorm","position_embedding":"rope"}' "$2" "$3" "$4" "$5" "$6" > "$f"
  fi
  echo "$f"
}
: > "$out/campaign.jsonl"
for fam in gpt llama; do
  # layers hidden heads kv ffn seq, attentions, finite-difference probes: the large size costs
  # about a minute a run on one core, so it runs eager only, with 2 probes (kMaxFdWork allows 2).
  for size in "4 128 4 2 384 64|eager flash|12" "8 256 8 4 768 128|eager|2"; do
    IFS='|' read -r dims atts probes <<< "$size"
    set -- $dims
    m=$(model "$fam" "$1" "$2" "$3" "$4" "$5")
    for att in $atts; do
      for pol in none selective full every:2 every:3; do
        args=(--executor cpu --json --model "$m" --seq "$6" --micro-batch 2 --attention "$att"
              --recompute "$pol" --reference on --fd-probes "$probes")
        [ "$fam" = gpt ] && args+=(--dropout 0.1)
        "$v" "${args[@]}" | python3 -c "
import json, sys
r = json.load(sys.stdin)
print(json.dumps({k: r.get(k) for k in ('passed', 'predicted_peak_bytes', 'measured_peak_bytes',
    'max_rel_error', 'fd_max_rel_error', 'fd_bound', 'fd_worst_ratio', 'fd_worst_probe')} |
    {'config': '$fam L$1 h$2 s$6 $att $pol'}))" >> "$out/campaign.jsonl" || true
        tail -n 1 "$out/campaign.jsonl"
      done
    done
  done
done
python3 - "$out/campaign.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| config | peak predicted = measured | fp32 vs fp64 | FD error / largest grad | FD bound | worst probe (of its bound) | pass |")
print("|---|---|---:|---:|---:|---|---|")
for r in rows:
    print(f"| {r['config']} | {r['predicted_peak_bytes'] == r['measured_peak_bytes']} | {r['max_rel_error']:.2e} | "
          f"{r['fd_max_rel_error']:.2e} | {r['fd_bound']:.2e} | {r['fd_worst_probe']} ({r['fd_worst_ratio']:.2g}) | "
          f"{'PASS' if r['passed'] else 'FAIL'} |")
print(f"{sum(r['passed'] for r in rows)} of {len(rows)} passed")
PY
