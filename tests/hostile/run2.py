#!/usr/bin/env python3
"""Step 2: new hostile inputs for actmem / actmem-validate (none in /tmp/hostile/run.py or
tests/data/bad_inputs.json). Files are generated under /tmp/hostile6/files/n/. Records one JSON line
per input in /tmp/hostile6/results.jsonl. Usage: python3 run2.py [id ...]"""
import json, os, re, shlex, subprocess, sys, time

A = "/tmp/hostile6/bin/actmem"; V = "/tmp/hostile6/bin/actmem-validate"
D = "/tmp/hostile6/files/n/"
OUT = "/tmp/hostile6/step1/results_run2.jsonl"
os.makedirs(D, exist_ok=True)
R, OK, ANY = "reject", "accept", "any"

def w(name, data):
    p = D + name
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return p
def wj(name, obj): return w(name, json.dumps(obj))
def lines(name, *ls):
    return w(name, "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in ls))

# ------------------------------------------------------------------ files
tiny = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 64,
        "vocab_size": 50, "max_position_embeddings": 16}
T = json.dumps(tiny)
TINY = wj("tiny.json", tiny)
mid = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 256,
       "vocab_size": 50, "max_position_embeddings": 64}
MID = wj("mid.json", mid)
hf = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
      "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128}
HF = wj("hf_llama.json", hf)
g2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 128}
G2 = wj("hf_gpt2.json", g2)
ours = {k: v for k, v in hf.items() if k != "model_type"}
OURS = wj("ours.json", ours)
stack2 = dict(ours, layer_kinds={"b": {"intermediate_size": 64}}, layer_stack=["base", "b"])
STACK2 = wj("stack2.json", stack2)

def body(obj): return json.dumps(obj)[1:]   # '"k": v, ...}' to append after a prefix
# duplicate keys at depths
w("dup_kind_field.json", '{"layer_kinds":{"b":{"intermediate_size":64,"intermediate_size":32}},"layer_stack":["base","b"],' + body(ours))
w("dup_kind_name.json", '{"layer_kinds":{"b":{"intermediate_size":64},"b":{"intermediate_size":32}},"layer_stack":["base","b"],' + body(ours))
w("dup_meta.json", '{"metadata":{"name":"x","source":"a","name":"y"},' + T[1:])
w("dup_run.json", '{"layer_kinds":{"b":{"intermediate_size":64}},"layer_stack":[{"kind":"b","repeat":1,"kind":"base"},"b"],' + body(ours))
w("dup_escaped.json", '{"hidden\\u005fsize": 128,' + T[1:])
w("case_key.json", '{"Hidden_size": 128,' + T[1:])
w("dup_hf_type.json", '{"model_type":"llama",' + body(hf))
w("dup_hf_ignored_nested.json", json.dumps(hf)[:-1] + ',"rope_scaling":{"factor":1,"factor":8}}')
w("dup_hf_id2label.json", json.dumps(hf)[:-1] + ',"id2label":{"0":"a","0":"b"}}')
w("dup_deep40.json", '{"metadata":{"notes":' + '{"a":' * 40 + '{"k":1,"k":2}' + '}' * 40 + '},' + T[1:])
w("cfg_dup_equal.json", '{"seq": 16, "seq": 16}')
w("cfg_dup_split.json", '{"pp": 2, "layer_split": [1,1], "layer_split": [1,1]}')
w("cfg_dup_deep_keep.json", '{"recompute":"custom","custom_keep":["attn.q",{"x":1,"x":1}]}')
# NUL bytes
w("nul_first.json", b"\x00" + T.encode())
w("bom_nul.json", b"\xef\xbb\xbf\x00" + T.encode())
w("nul_only.json", b"\x00")
w("cfg_key_esc_nul.json", '{"seq\\u0000": 16}')
w("name_esc_nul.json", json.dumps(dict(tiny, metadata={"name": "a\u0000b\u001b[2Jc"})))
# BOMs
w("cfg_bom_dup.json", b'\xef\xbb\xbf{"seq":16,"seq":32}')
w("double_bom.json", b"\xef\xbb\xbf\xef\xbb\xbf" + T.encode())
w("utf16le_bom.json", b"\xff\xfe" + T.encode("utf-16-le"))
w("bom_middle.json", b'{"hidden_size": 32,\xef\xbb\xbf' + T[1:].encode())
w("bom_only.json", b"\xef\xbb\xbf")
w("cfg_bom_ws.json", b"\xef\xbb\xbf   \n")
# value counts around 2^18 (the model's own values: object + 6 members + metadata obj + notes array)
base_vals = 1 + 6 + 1 + 1
n_ok = (1 << 18) - base_vals
w("vals_2p18.json", '{"metadata":{"notes":[' + ",".join(["0"] * n_ok) + ']},' + T[1:])
w("vals_2p18p1.json", '{"metadata":{"notes":[' + ",".join(["0"] * (n_ok + 1)) + ']},' + T[1:])
w("hf_id2label_200k.json", json.dumps(dict(hf, id2label={str(i): "L" for i in range(200000)})))
big = (16 << 20)
pre = '{"metadata":{"notes":"'; post = '"},' + T[1:]
w("exact16mib_str.json", pre + "n" * (big - len(pre) - len(post)) + post)
w("over16mib_str.json", pre + "n" * (big + 1 - len(pre) - len(post)) + post)
w("cfg_keep_256_dups.json", json.dumps({"recompute": "custom", "custom_keep": ["attn.q"] * 256}))
# long keys and strings
w("cfg_long_key.json", '{"' + "q" * (1 << 20) + '": 1}')
w("cfg_long_dtype.json", json.dumps({"dtype": "\u001b[31m" + "b" * (1 << 20)}))
w("long_kind_name.json", json.dumps(dict(ours, layer_kinds={"k" * 100000: {"intermediate_size": 64}}, layer_stack=["base", "z" * 100000])))
w("hf_long_unknown_key.json", json.dumps(dict(hf, **{"u" * 200000: 1})))
# deep nesting
def nest(n): return "[" * n + "]" * n
w("deep_meta_total64.json", '{"metadata":{"notes":' + nest(62) + '},' + T[1:])   # 1+1+62 = 64
w("deep_meta_total65.json", '{"metadata":{"notes":' + nest(63) + '},' + T[1:])
w("deep_obj64.json", '{"metadata":{"notes":' + '{"a":' * 61 + '1' + '}' * 61 + '},' + T[1:])
w("cfg_deep_unclosed.json", "[" * 100000)
w("cfg_deep64.json", '{"seq":' + nest(63) + '}')
# unicode
w("unicode_key_escape.json", '{"\\u0068idden_size": 32,' + json.dumps({k: v for k, v in tiny.items() if k != "hidden_size"})[1:])
w("lone_high_surrogate.json", '{"metadata":{"name":"\\ud800x"},' + T[1:])
w("cfg_reversed_pair_key.json", '{"\\udc00\\ud800": 1}')
w("emoji_name.json", json.dumps(dict(tiny, metadata={"name": "\U0001F600 model"})))
w("cfg_overlong_utf8.json", b'{"dtype": "bf\xc0\xaf16"}')
w("raw_surrogate_utf8_name.json", b'{"metadata":{"name":"\xed\xa0\x80x"},' + T[1:].encode())
w("cfg_zwnbsp_key.json", '{"seq\\ufeff": 16}')
C1 = "A\u009b31mB\u007fC\u0085D"
w("c1_name.json", json.dumps(dict(tiny, metadata={"name": C1})))
w("cfg_c1_key.json", json.dumps({"se\u009bq": 1}))
w("hf_c1_key.json", json.dumps(dict(hf, **{"x\u009b2J\u007f": 1})))
# numbers
w("cfg_seq_float_int.json", '{"seq": 16.0}')
w("cfg_seq_1e400.json", '{"seq": 1e400}')
w("cfg_seq_negzero.json", '{"seq": -0.0}')
w("cfg_tp_negzero.json", '{"tp": -0}')
w("cfg_zero_1e0.json", '{"zero": 1e0}')
w("cfg_dropout_round1.json", '{"dropout": 0.99999999999999999}')
w("cfg_frag_underflow.json", '{"fragmentation_pct": 1e-400}')
w("cfg_gpumem_max.json", '{"gpu_memory_bytes": 9223372036854775807}')
w("cfg_split_float.json", '{"pp": 2, "layer_split": [6.0, 6e0]}')
w("cfg_mb_2p40.json", '{"micro_batch": 1099511627776, "seq": 1, "attention": "flash"}')
w("cfg_mb_2p40p1.json", '{"micro_batch": 1099511627777, "seq": 1}')
w("cfg_ga_zero.json", '{"grad_accum": 0}')
w("cfg_buf_float.json", '{"cublas_workspace_bytes": 1125899906842624.0}')
w("cfg_uint64max_dp.json", '{"dp": 18446744073709551615, "zero": 3}')
# config merge files
for name, obj in [("m_ga4", {"grad_accum": 4}), ("m_mb8", {"micro_batches": 8}), ("m_mb4", {"micro_batches": 4}),
                  ("m_drop01", {"dropout": 0.1}), ("m_attn0", {"attention_dropout": 0}),
                  ("m_drop01_attn0", {"dropout": 0.1, "attention_dropout": 0}),
                  ("m_drop0_hid01", {"dropout": 0, "hidden_dropout": 0.1}),
                  ("m_drop01_consistent", {"dropout": 0.1, "attention_dropout": 0.1, "hidden_dropout": 0.1}),
                  ("m_gpumem80", {"gpu_memory": "80GiB"}), ("m_gpumem_bytes80", {"gpu_memory_bytes": 85899345920}),
                  ("m_gpumem_bytes1", {"gpu_memory_bytes": 1}),
                  ("m_seq512", {"seq": 512}), ("m_seq512f", {"seq": 512.0}), ("m_seq512s", {"seq": "512"}),
                  ("m_gpu_h100", {"gpu": "h100-80gb"}), ("m_gpu_b200", {"gpu": "b200"}), ("m_hid01", {"hidden_dropout": 0.1}),
                  ("m_empty", {}), ("m_keep_layersK", {"recompute": "layers:K", "custom_keep": ["attn.q"]}),
                  ("m_gpumem_half_byte", {"gpu_memory": "0.5B"})]:
    wj(name + ".json", obj)
# HF configs
wj("hf_quant.json", dict(hf, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_compute_dtype": "bfloat16"}))
wj("hf_attn_impl_flash.json", dict(hf, _attn_implementation="flash_attention_2"))
wj("hf_attn_impl2.json", dict(hf, attn_implementation="flash_attention_2"))
wj("hf_gpt2_upcast.json", dict(g2, reorder_and_upcast_attn=True))
wj("hf_mixtral.json", dict(hf, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2))
wj("hf_mixtral_both_counts.json", dict(hf, model_type="mixtral", num_local_experts=4, num_experts=8, num_experts_per_tok=2))
wj("hf_mixtral_num_experts_only.json", dict(hf, model_type="mixtral", num_experts=4, num_experts_per_tok=2))
wj("hf_qwen2moe.json", dict(hf, model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64))
wj("hf_qwen2moe_both_counts.json", dict(hf, model_type="qwen2_moe", num_experts=8, num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64))
wj("hf_qwen2moe_sparse3.json", dict(hf, model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, decoder_sparse_step=3))
wj("hf_qwen2moe_mlponly1.json", dict(hf, model_type="qwen2_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, mlp_only_layers=[1]))
wj("ours_topk_no_experts.json", dict(ours, num_experts_per_tok=2))
wj("ours_moe_inter_no_experts.json", dict(ours, moe_intermediate_size=32))
wj("ours_capacity_no_experts.json", dict(ours, capacity_factor=1.25))
wj("ours_shared_no_experts.json", dict(ours, num_shared_experts=1, shared_expert_intermediate_size=32))
wj("hf_mistral_sw.json", dict(hf, model_type="mistral", sliding_window=8, head_dim=16))
wj("hf_qwen2_sw.json", dict(hf, model_type="qwen2", use_sliding_window=True, sliding_window=8, max_window_layers=1))
wj("hf_gpt2_ninner_null.json", dict(g2, n_inner=None))
wj("hf_gpt2_quick_gelu.json", dict(g2, activation_function="quick_gelu"))
wj("hf_gpt2_gelu_new.json", dict(g2, activation_function="gelu_new"))
for fam in ["phi", "phi3", "gemma", "gemma2", "qwen3", "falcon", "LlamaForCausalLM", "deepseek_v3"]:
    wj(f"hf_{fam}.json", dict(hf, model_type=fam))
wj("hf_llama_headdim32.json", dict(hf, head_dim=32))
wj("hf_llama_kv3.json", dict(hf, num_key_value_heads=3))
wj("hf_llama_tie.json", dict(hf, tie_word_embeddings=True))
wj("hf_llama_mlp_bias.json", dict(hf, mlp_bias=True))
wj("hf_llama_unknown.json", dict(hf, foo_memory_knob=7))
wj("hf_llama_topk.json", dict(hf, num_experts_per_tok=2))
# validate models
wj("v_gpt2_hf.json", {"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 2, "vocab_size": 50, "n_positions": 16})
wj("v_llama_hf.json", dict(tiny, model_type="llama"))
wj("v_llama_quant.json", dict(tiny, model_type="llama", quantization_config={"load_in_4bit": True}))
wj("cfg_frag5.json", {"fragmentation_pct": 5})
wj("v_big_work.json", {"hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4, "intermediate_size": 1024,
                       "vocab_size": 50, "max_position_embeddings": 512})
# requests streams
Q = lambda **k: dict(preset="gpt2", **k)
CMDS = ["estimate", "explain", "timeline", "fit", "plan", "sweep", "view"]
def qc(cmd, **k):
    d = dict(command=cmd, preset="gpt2", **k)
    if cmd in ("fit", "plan"): d["gpu"] = "h100-80gb"
    return d
lines("req_events_on.txt", *[qc(c, events="none") for c in CMDS])
lines("req_compact_on.txt", *[qc(c, compact_events=False) for c in CMDS])
lines("req_stages_on.txt", *[qc(c, stages="worst") for c in CMDS])
lines("req_summary_on.txt", *[qc(c, summary=False) for c in CMDS])
lines("req_sweep_on.txt", *[qc(c, sweep={"seqs": [64]}) for c in CMDS])
def qe(cmd, **k):
    d = dict(command=cmd, example="seed000-flash-7b", **k)
    if cmd in ("fit", "plan"): d["gpu"] = "h100-80gb"
    return d
lines("req_example_on.txt", *[qe(c) for c in CMDS + ["presets"]])
lines("req_presets_extra.txt", *[dict(command="presets", **{k: v}) for k, v in
      [("preset", "gpt2"), ("model", tiny), ("config", {}), ("gpu", "b200"), ("sweep", {}), ("events", "all"),
       ("summary", True), ("stages", "all"), ("compact_events", True), ("example", "seed000-flash-7b"), ("bogus", 1)]])
lines("req_gpu_vs_config.txt",
      Q(gpu="h100-80gb", config={"gpu": "h100-80gb"}),
      Q(gpu="h100-80gb", config={"gpu": "b200"}),
      Q(gpu="", config={"gpu": "h100-80gb"}),
      Q(gpu=""),
      Q(gpu="h100-80gb", config={"gpu_memory_bytes": 1073741824}),
      Q(gpu="H100-80GB"),
      Q(gpu=123),
      dict(example="seed000-flash-7b", gpu="b200", config={"gpu": "h100-80gb"}))
lines("req_gpu_empty.txt", Q(gpu=""))
lines("req_dup_depths.txt",
      '{"preset":"gpt2","config":{"seq":512,"s\\u0065q":256}}',
      '{"command":"sweep","preset":"gpt2","sweep":{"seqs":[64],"seqs":[128]}}',
      '{"model":{"metadata":{"name":"a","name":"b"},' + T[1:] + '}',
      '{"preset":"gpt2","preset":"gpt2"}',
      '{"model":' + json.dumps(hf)[:-1] + ',"rope_scaling":{"type":"x","type":"y"}}}')
lines("req_unicode.txt",
      '{"preset":"\\u0067pt2"}',
      '{"preset":"\\ud800gpt2"}',
      '{"preset":"gpt2","config":{"\\u0073eq":512}}',
      '{"preset":"\\ud83d\\ude00"}',
      '{"preset":"gpt2\\u0000"}')
lines("req_numbers.txt",
      Q(config={"seq": 512.0}), '{"preset":"gpt2","config":{"seq":5.12e2}}', '{"preset":"gpt2","config":{"seq":-0}}',
      '{"preset":"gpt2","config":{"zero":-0.0}}', '{"preset":"gpt2","config":{"micro_batch":18446744073709551616}}',
      '{"preset":"gpt2","config":{"tp":1E0}}', '{"preset":"gpt2","config":{"seq":1e400}}',
      '{"preset":"gpt2","config":{"dropout":-0.0}}')
lines("req_deep64.txt", '{"preset":"gpt2","x":' + nest(63) + '}')
lines("req_deep65.txt", '{"preset":"gpt2","x":' + nest(64) + '}')
lines("req_long_key.txt", '{"preset":"gpt2","' + "K" * (1 << 20) + '":1}')
lines("req_long_preset_ctrl.txt", json.dumps({"preset": "\u009b\u007f" + "p" * 500000}))
lines("req_c1_model.txt", {"model": dict(tiny, metadata={"name": C1})})
w("req_bom_line2.txt", b'{"preset":"gpt2","summary":true}\n\xef\xbb\xbf{"preset":"gpt2","summary":true}\n')
w("req_utf16.txt", '{"preset":"gpt2"}\n'.encode("utf-16"))
w("req_formfeed.txt", b'\x0c\n{"preset":"gpt2","summary":true}\n\x0b\n')
w("req_nul_between.txt", b'{"preset":"gpt2","summary":true}\n\x00\n{"preset":"gpt2","summary":true}\n')
vals = (1 << 18) - 4
w("req_vals_2p18.txt", '{"preset":"gpt2","summary":true,"config":{"custom_keep":[' + ",".join(['"a"'] * vals) + ']}}\n')
w("req_vals_2p18p1.txt", '{"preset":"gpt2","summary":true,"config":{"custom_keep":[' + ",".join(['"a"'] * (vals + 1)) + ']}}\n')
lines("req_sweep_bounds.txt",
      {"command": "sweep", "preset": "gpt2", "sweep": {"seqs": [1 << 30] * 16, "micro_batches": [1 << 20] * 16}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"seqs": [(1 << 30) + 1]}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"micro_batches": [(1 << 20) + 1]}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"micro_batches": list(range(1, 18))}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"seqs": []}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"seqs": [64.0, 128]}},
      {"command": "sweep", "preset": "gpt2", "sweep": {"seqs": [64], "bogus": 1}})
lines("req_sweep_cfg_seq.txt", {"command": "sweep", "preset": "gpt2", "config": {"seq": 512, "micro_batch": 3}})
lines("req_sweep_cfg_none.txt", {"command": "sweep", "preset": "gpt2"})
lines("req_plan_cfg_rc.txt", {"command": "plan", "preset": "gpt2", "gpu": "h100-80gb", "config": {"recompute": "full", "offload": True}})
lines("req_plan_cfg_none.txt", {"command": "plan", "preset": "gpt2", "gpu": "h100-80gb"})

# ------------------------------------------------------------------ cases
CASES = []
def case(cid, argv, expect=ANY, out=None, stdin=None, note="", limit_s=None, lines=None, differs=None,
         same=None, jcheck=None, warn_or_reject=None):
    if limit_s is None: limit_s = 120.0 if argv[0] == V else 2.0
    CASES.append(dict(id=cid, argv=argv, expect=expect, out=out, stdin=stdin, note=note, limit_s=limit_s,
                      lines=lines, differs=differs, same=same, jcheck=jcheck, warn_or_reject=warn_or_reject))
def a(cid, *args, **kw): case(cid, [A, *args], **kw)
def v(cid, *args, **kw): case(cid, [V, *args], **kw)
G = ["--preset", "gpt2"]; L8 = ["--preset", "llama-3.1-8b"]
TM = ["--model", TINY, "--seq", "16"]
EST = lambda f: ["estimate", "--model", D + f, "--seq", "16", "--json"]

# A. duplicate keys at depths (files)
for f in ["dup_kind_field", "dup_kind_name", "dup_meta", "dup_run", "dup_escaped", "case_key", "dup_hf_type",
          "dup_hf_ignored_nested", "dup_hf_id2label", "dup_deep40"]:
    a("dup-" + f, *EST(f + ".json"), expect=R, out="json")
a("cfg-dup-equal-values", "estimate", *G, "--config", D + "cfg_dup_equal.json", expect=R, note="same value twice: still a duplicate key")
a("cfg-dup-layer-split", "estimate", *G, "--config", D + "cfg_dup_split.json", expect=R)
a("cfg-dup-in-keep-array", "estimate", *G, "--config", D + "cfg_dup_deep_keep.json", expect=R)
# B. NUL
for f in ["nul_first", "bom_nul", "nul_only"]:
    a("nul-" + f, *EST(f + ".json"), expect=R, out="json")
a("cfg-key-escaped-nul", "estimate", *G, "--config", D + "cfg_key_esc_nul.json", expect=R)
a("name-escaped-nul-table", "estimate", "--model", D + "name_esc_nul.json", "--seq", "16", expect=OK)
a("name-escaped-nul-json", "estimate", "--model", D + "name_esc_nul.json", "--seq", "16", "--json", expect=OK, out="json")
a("name-escaped-nul-explain", "explain", "--model", D + "name_esc_nul.json", "--seq", "16", expect=OK)
# C. BOM
a("cfg-bom-dup", "estimate", *G, "--config", D + "cfg_bom_dup.json", expect=R)
for f, e in [("double_bom", R), ("utf16le_bom", R), ("bom_middle", R), ("bom_only", R)]:
    a("bom-" + f, *EST(f + ".json"), expect=e, out="json")
a("cfg-bom-ws-only", "estimate", *G, "--config", D + "cfg_bom_ws.json", expect=R)
# D. many values / big files
a("vals-exactly-2p18", *EST("vals_2p18.json"), expect=OK, out="json")
a("vals-2p18-plus-1", *EST("vals_2p18p1.json"), expect=R, out="json")
a("hf-id2label-200k", "estimate", "--model", D + "hf_id2label_200k.json", "--seq", "16", expect=OK)
a("file-exactly-16mib-string", "estimate", "--model", D + "exact16mib_str.json", "--seq", "16", expect=OK)
a("file-16mib-plus-1-string", "estimate", "--model", D + "over16mib_str.json", "--seq", "16", expect=R)
a("keep-256-dups", "estimate", *G, "--config", D + "cfg_keep_256_dups.json", "--json", out="json")
a("layer-split-4096-on-65536L", "estimate", "--model", "/tmp/hostile6/files/layers_65536.json", "--seq", "16", "--pp", "4096",
  "--micro-batches", "1", "--layer-split", ",".join(["16"] * 4096))
# E. long keys / strings
a("cfg-1mib-key", "estimate", *G, "--config", D + "cfg_long_key.json", expect=R)
a("cfg-1mib-dtype-esc", "estimate", *G, "--config", D + "cfg_long_dtype.json", expect=R)
a("long-kind-name", "estimate", "--model", D + "long_kind_name.json", "--seq", "16", expect=R)
a("hf-200k-unknown-key-table", "estimate", "--model", D + "hf_long_unknown_key.json", "--seq", "16")
a("gpu-100k-value", "estimate", *G, "--gpu", "\u009b" + "g" * 100000, expect=R)
a("recompute-every-100k-digits", "estimate", *G, "--recompute", "every:" + "1" * 100000, expect=R)
a("custom-keep-long-id", "estimate", *G, "--recompute", "custom", "--custom-keep", "\x1b]0;x\x07" + "i" * 50000, expect=R)
a("layer-split-long-item", "estimate", *G, "--pp", "2", "--layer-split", "6," + "9" * 10000, expect=R)
# F. deep nesting
a("deep-meta-total-64", *EST("deep_meta_total64.json"), out="json", note="64 levels: the bound is inclusive?")
a("deep-meta-total-65", *EST("deep_meta_total65.json"), expect=R, out="json")
a("deep-objects-63", *EST("deep_obj64.json"), out="json")
a("cfg-deep-unclosed-100k", "estimate", *G, "--config", D + "cfg_deep_unclosed.json", expect=R)
a("cfg-deep-64-value", "estimate", *G, "--config", D + "cfg_deep64.json", expect=R)
# G. unicode
a("unicode-escaped-key", *EST("unicode_key_escape.json"), expect=OK, out="json")
a("lone-high-surrogate", *EST("lone_high_surrogate.json"), expect=R, out="json")
a("cfg-reversed-surrogates-key", "estimate", *G, "--config", D + "cfg_reversed_pair_key.json", expect=R)
a("emoji-name-table", "estimate", "--model", D + "emoji_name.json", "--seq", "16", expect=OK)
a("cfg-overlong-utf8", "estimate", *G, "--config", D + "cfg_overlong_utf8.json", expect=R)
a("cfg-overlong-utf8-json", "estimate", *G, "--config", D + "cfg_overlong_utf8.json", "--json", expect=R, out="json")
a("raw-utf8-surrogate-name", "estimate", "--model", D + "raw_surrogate_utf8_name.json", "--seq", "16")
a("raw-utf8-surrogate-name-json", "estimate", "--model", D + "raw_surrogate_utf8_name.json", "--seq", "16", "--json", out="json")
a("cfg-zwnbsp-key", "estimate", *G, "--config", D + "cfg_zwnbsp_key.json", expect=R)
a("c1-del-name-table", "estimate", "--model", D + "c1_name.json", "--seq", "16", expect=OK)
a("c1-del-name-json", "estimate", "--model", D + "c1_name.json", "--seq", "16", "--json", expect=OK, out="json",
  note="DEL and C1 controls (U+009B CSI, U+0085) in a model name")
a("c1-del-name-timeline-json", "timeline", "--model", D + "c1_name.json", "--seq", "16", "--json", expect=OK, out="json")
a("c1-del-name-explain", "explain", "--model", D + "c1_name.json", "--seq", "16", expect=OK)
a("cfg-c1-key", "estimate", *G, "--config", D + "cfg_c1_key.json", expect=R)
a("cfg-c1-key-json", "estimate", *G, "--config", D + "cfg_c1_key.json", "--json", expect=R, out="json")
a("hf-c1-key-warning-table", "estimate", "--model", D + "hf_c1_key.json", "--seq", "16")
a("hf-c1-key-warning-json", "estimate", "--model", D + "hf_c1_key.json", "--seq", "16", "--json", out="json")
a("argv-c1-preset-json", "estimate", "--preset", "gpt2\u009b2J\u007f", "--json", expect=R, out="json")
# H. numbers
a("cfg-seq-16.0", "estimate", "--model", TINY, "--config", D + "cfg_seq_float_int.json", "--json", expect=OK, out="json")
a("cfg-seq-1e400", "estimate", *G, "--config", D + "cfg_seq_1e400.json", expect=R)
a("cfg-seq-neg-zero", "estimate", *G, "--config", D + "cfg_seq_negzero.json", expect=R, note="-0.0 must not become seq 0 = default 2048")
a("cfg-tp-neg-zero", "estimate", *G, "--config", D + "cfg_tp_negzero.json", expect=R)
a("cfg-zero-1e0", "estimate", *G, "--config", D + "cfg_zero_1e0.json", "--json", expect=OK, out="json")
a("cfg-dropout-rounds-to-1", "estimate", *G, "--config", D + "cfg_dropout_round1.json", expect=R)
a("cfg-frag-underflow", "estimate", *G, "--config", D + "cfg_frag_underflow.json", "--json", out="json")
a("cfg-gpumem-bytes-max-fit", "fit", *G, "--config", D + "cfg_gpumem_max.json", "--json", expect=OK, out="json")
a("cfg-gpumem-bytes-max-plan", "plan", *G, "--config", D + "cfg_gpumem_max.json", "--json", expect=OK, out="json")
a("cfg-split-floats", "estimate", *G, "--config", D + "cfg_split_float.json", "--json", expect=OK, out="json")
a("cfg-mb-2p40", "estimate", "--model", TINY, "--config", D + "cfg_mb_2p40.json", "--json", out="json")
a("cfg-mb-2p40p1", "estimate", "--model", TINY, "--config", D + "cfg_mb_2p40p1.json", expect=R)
a("cfg-grad-accum-zero", "estimate", *G, "--config", D + "cfg_ga_zero.json", "--json", out="json", note="schema.md: 0 = auto")
a("cli-grad-accum-zero", "estimate", *G, "--grad-accum", "0", "--json", out="json", note="schema.md: 0 = auto")
a("cfg-buffer-2p50-float", "estimate", *G, "--config", D + "cfg_buf_float.json", "--json", out="json")
a("cfg-dp-uint64max-zero3", "estimate", *G, "--config", D + "cfg_uint64max_dp.json", "--json", out="json")
a("gpumem-int64max-B", "estimate", *G, "--gpu-memory", "9223372036854775807B", "--json", expect=OK, out="json")
a("gpumem-int64max-plus1-B", "estimate", *G, "--gpu-memory", "9223372036854775808B", expect=R)
a("gpumem-2p63-TiB", "estimate", *G, "--gpu-memory", "8388608TiB", expect=R)
a("gpumem-just-below-2p63-TiB", "estimate", *G, "--gpu-memory", "8388607.99999999999999TiB", "--json", out="json")
a("gpumem-half-byte", "estimate", *G, "--gpu-memory", "0.5B", expect=R, note="rounds down to 0 bytes")
a("gpumem-half-byte-cfg", "estimate", *G, "--config", D + "m_gpumem_half_byte.json", expect=R)
a("gpumem-1.9B", "estimate", *G, "--gpu-memory", "1.9B", "--json", out="json")
a("cli-tp-1.0", "estimate", *G, "--tp", "1.0", "--pp", "2.0", "--json", expect=OK, out="json")
a("cli-frag-neg-zero-eq", "estimate", *G, "--fragmentation=-0", "--json", out="json")
a("cli-seq-1e-0", "estimate", *G, "--seq", "1e-0", "--json", out="json")
a("cli-seq-int64min", "estimate", *G, "--seq", "-9223372036854775808", expect=R)
# I. request keys on commands that do not read them
def only_line(cmd, reader): return "ok" if cmd in reader else "err"
a("req-events-on-each", "requests", D + "req_events_on.txt", out="jsonl", lines=[only_line(c, ["timeline"]) for c in CMDS])
a("req-compact-on-each", "requests", D + "req_compact_on.txt", out="jsonl", lines=[only_line(c, ["timeline"]) for c in CMDS])
a("req-stages-on-each", "requests", D + "req_stages_on.txt", out="jsonl", lines=[only_line(c, ["view"]) for c in CMDS])
a("req-summary-on-each", "requests", D + "req_summary_on.txt", out="jsonl", lines=[only_line(c, ["estimate"]) for c in CMDS])
a("req-sweep-on-each", "requests", D + "req_sweep_on.txt", out="jsonl", lines=[only_line(c, ["sweep"]) for c in CMDS])
a("req-example-on-each", "requests", D + "req_example_on.txt", out="jsonl", lines=["ok", "ok", "ok", "err", "err", "err", "ok", "err"])  # round 4: example refused on fit, plan, sweep
a("req-presets-extra-keys", "requests", D + "req_presets_extra.txt", out="jsonl", lines=["err"] * 11)
# J. request gpu vs config.gpu
a("req-gpu-vs-config", "requests", D + "req_gpu_vs_config.txt", out="jsonl",
  lines=["ok", "err", "err", "err", "ok", "err", "err", "err"],
  note="line 4: gpu \"\" alone; line 8: example + gpu + config.gpu differing")
a("req-gpu-empty-string", "requests", D + "req_gpu_empty.txt", out="jsonl", lines=["err"],
  note="gpu \"\" answered as no GPU; config.gpu \"\" is refused")
# misc request streams
a("req-dup-at-depths", "requests", D + "req_dup_depths.txt", out="jsonl", lines=["err"] * 5)
a("req-unicode", "requests", D + "req_unicode.txt", out="jsonl", lines=["ok", "err", "ok", "err", "err"])
a("req-numbers", "requests", D + "req_numbers.txt", out="jsonl", lines=["ok", "ok", "err", "ok", "err", "ok", "err", "ok"])
a("req-deep-64", "requests", D + "req_deep64.txt", out="jsonl", lines=["err"])
a("req-deep-65", "requests", D + "req_deep65.txt", out="jsonl", lines=["err"])
a("req-1mib-key", "requests", D + "req_long_key.txt", out="jsonl", lines=["err"])
a("req-long-preset-c1", "requests", D + "req_long_preset_ctrl.txt", out="jsonl", lines=["err"])
a("req-c1-model-name", "requests", D + "req_c1_model.txt", out="jsonl", lines=["ok"], note="raw C1/DEL in the answer")
a("req-bom-line2", "requests", D + "req_bom_line2.txt", out="jsonl")
a("req-utf16", "requests", D + "req_utf16.txt", out="jsonl")
a("req-formfeed-vt-lines", "requests", D + "req_formfeed.txt", out="jsonl", lines=["err", "ok", "err"])
a("req-nul-line-between", "requests", D + "req_nul_between.txt", out="jsonl", lines=["ok", "err", "ok"])
a("req-vals-2p18", "requests", D + "req_vals_2p18.txt", out="jsonl", lines=["err"], note="2^18 values pass the scan; custom_keep >256 refused")
a("req-vals-2p18p1", "requests", D + "req_vals_2p18p1.txt", out="jsonl", lines=["err"])
a("req-sweep-bounds", "requests", D + "req_sweep_bounds.txt", out="jsonl", lines=["ok", "err", "err", "err", "err", "ok", "err"])
a("req-sweep-config-seq-mb", "requests", D + "req_sweep_cfg_seq.txt", out="jsonl", differs=[A, "requests", D + "req_sweep_cfg_none.txt"],
  note="config.seq / micro_batch on sweep")
a("req-plan-config-recompute-offload", "requests", D + "req_plan_cfg_rc.txt", out="jsonl", differs=[A, "requests", D + "req_plan_cfg_none.txt"])
# K. custom_keep and patterns
a("custom-with-keep", "estimate", *G, "--recompute", "custom", "--custom-keep", "attn.q", "--json", expect=OK, out="json",
  differs=[A, "estimate", *G, "--recompute", "custom", "--json"])
a("pattern-X-with-keep", "estimate", *G, "--recompute", "layers:KX", "--custom-keep", "attn.q", "--json", expect=OK, out="json",
  differs=[A, "estimate", *G, "--recompute", "layers:KX", "--json"])
a("pattern-noX-with-keep", "estimate", *G, "--recompute", "layers:KS", "--custom-keep", "attn.q", expect=R)
a("every-with-keep", "estimate", *G, "--recompute", "every:2", "--custom-keep", "attn.q", expect=R)
a("selective-with-keep", "estimate", *G, "--recompute", "selective", "--custom-keep", "attn.q", expect=R)
a("none-with-keep", "estimate", *G, "--recompute", "none", "--custom-keep", "attn.q", expect=R)
a("cfg-layersK-with-keep", "estimate", *G, "--config", D + "m_keep_layersK.json", expect=R)
a("pattern-X-only-pp2", "estimate", *G, "--recompute", "layers:X", "--custom-keep", "mlp.fc1_in", "--pp", "2", "--json", out="json")
a("pattern-x-lower", "estimate", *G, "--recompute", "layers:Kx", expect=R)
a("pattern-X-keep-dups", "estimate", *G, "--recompute", "layers:XK", "--custom-keep", "attn.q,attn.q", "--json", out="json")
a("pattern-X-no-keep", "estimate", *G, "--recompute", "layers:XK", "--json", out="json")
a("custom-keep-textbook-id", "estimate", *G, "--profile", "textbook", "--recompute", "custom", "--custom-keep", "attn.qkv_in")
a("pattern-X-offload", "timeline", *G, "--recompute", "layers:XKSCR", "--custom-keep", "attn.q", "--offload", "--pp", "2", "--json", out="json")
a("custom-keep-stack-kinds", "estimate", "--model", STACK2, "--seq", "16", "--recompute", "custom", "--custom-keep", "mlp.fc1_in", "--json", out="json")
a("pattern-long-vs-layers-pp2", "estimate", *G, "--pp", "2", "--recompute", "layers:KKKKKKCCCCCC", "--json", out="json",
  differs=[A, "estimate", *G, "--pp", "2", "--recompute", "layers:KKKKKK", "--json"],
  note="12 letters for 12 layers on 2 stages: letters 7-12 used or refused?")
# L. schedules
a("gpipe-vpp1", "estimate", *L8, "--pp", "4", "--schedule", "gpipe", "--json", expect=OK, out="json")
a("gpipe-vpp2", "timeline", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--schedule", "gpipe", "--json", out="json",
  differs=[A, "timeline", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--schedule", "interleaved", "--json"])
a("1f1b-vpp2-explicit", "estimate", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--schedule", "1f1b", "--json", out="json",
  jcheck="schedule_interleaved")
a("interleaved-vpp2-pp1", "estimate", *L8, "--vpp", "2", "--schedule", "interleaved", expect=R)
a("interleaved-mb-not-multiple", "estimate", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "3", "--schedule", "interleaved", expect=R)
a("interleaved-uneven-split", "timeline", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "7,5", "--schedule", "interleaved", "--csv", expect=OK)
a("gpipe-pp1", "estimate", *G, "--schedule", "gpipe", "--json", out="json")
a("schedule-mixed-case", "estimate", *L8, "--pp", "2", "--schedule", "GPipe", expect=R)
a("gpipe-vpp4-timeline", "timeline", *L8, "--pp", "2", "--vpp", "4", "--micro-batches", "8", "--schedule", "gpipe", "--csv", expect=OK)
a("interleaved-cfg-schedule-flag-vpp1", "estimate", *L8, "--pp", "2", "--vpp", "1", "--schedule=interleaved", expect=R)
# M. sweep grids
S16 = ",".join(str(1 << 30) for _ in range(16)); M16 = ",".join(str(1 << 20) for _ in range(16))
a("sweep-16x16-at-caps-405b", "sweep", "--preset", "llama-3.1-405b", "--sweep-seqs", S16, "--sweep-micro-batches", M16, "--json", out="json")
a("sweep-seq-cap-plus-1", "sweep", *G, "--sweep-seqs", str((1 << 30) + 1), expect=R)
a("sweep-mb-cap-plus-1", "sweep", *G, "--sweep-micro-batches", str((1 << 20) + 1), expect=R)
a("sweep-mb-17", "sweep", *G, "--sweep-micro-batches", ",".join(["1"] * 17), expect=R)
a("sweep-empty-item", "sweep", *G, "--sweep-seqs", "64,,128", expect=R)
a("sweep-trailing-comma", "sweep", *G, "--sweep-seqs=64,", expect=R)
a("sweep-leading-space", "sweep", *G, "--sweep-seqs= 64", "--json", out="json")
a("sweep-float-items", "sweep", *G, "--sweep-seqs", "64.0,1e2", "--json", out="json")
a("sweep-with-seq-flag", "sweep", *G, "--seq", "512", "--json", out="json", differs=[A, "sweep", *G, "--json"],
  note="--seq on sweep: used or refused?")
a("sweep-with-micro-batch-flag", "sweep", *G, "--micro-batch", "3", "--json", out="json", differs=[A, "sweep", *G, "--json"])
a("sweep-seqs-with-micro-batch-flag", "sweep", "--preset", "llama-3.1-8b", "--sweep-seqs", "1024", "--micro-batch", "8", "--json", out="json",
  differs=[A, "sweep", "--preset", "llama-3.1-8b", "--sweep-seqs", "1024", "--json"])
a("sweep-gpu-table", "sweep", *G, "--gpu", "rtx-4090", "--sweep-seqs", "256,1024", differs=[A, "sweep", *G, "--sweep-seqs", "256,1024"])
a("sweep-405b-pp16-vpp2", "sweep", "--preset", "llama-3.1-405b", "--pp", "14", "--vpp", "9", "--micro-batches", "8190",
  "--sweep-seqs", ",".join(str(1024 * i) for i in range(1, 17)), "--sweep-micro-batches", ",".join(str(i) for i in range(1, 17)))
# N. fit / plan budgets
a("fit-1KiB", "fit", *G, "--gpu-memory", "1KiB", "--json", expect=OK, out="json")
a("fit-int64max", "fit", "--preset", "llama-3.1-8b", "--gpu-memory", "9223372036854775807B", "--json", expect=OK, out="json")
a("plan-int64max", "plan", "--preset", "llama-3.1-8b", "--gpu-memory", "9223372036854775807B", "--json", expect=OK, out="json")
a("plan-1KiB", "plan", *G, "--gpu-memory", "1KiB", "--json", expect=OK, out="json")
a("plan-1KiB-table", "plan", *G, "--gpu-memory", "1KiB", expect=OK)
a("fit-gpu-and-budget", "fit", *G, "--gpu", "h100-80gb", "--gpu-memory", "1GiB", "--json", out="json", jcheck="budget_1GiB")
a("plan-recompute-flag", "plan", *G, "--gpu", "h100-80gb", "--recompute", "full", "--json", out="json",
  differs=[A, "plan", *G, "--gpu", "h100-80gb", "--json"], note="--recompute on plan: used or refused?")
a("plan-offload-flag", "plan", *G, "--gpu", "h100-80gb", "--offload", "--json", out="json",
  differs=[A, "plan", *G, "--gpu", "h100-80gb", "--json"])
a("plan-custom-keep", "plan", *G, "--gpu", "h100-80gb", "--recompute", "custom", "--custom-keep", "attn.q", "--json", out="json",
  differs=[A, "plan", *G, "--gpu", "h100-80gb", "--json"])
a("fit-recompute-used", "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--recompute", "full", "--json", out="json",
  differs=[A, "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--json"])
a("fit-micro-batch-used", "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--micro-batch", "4", "--json", out="json",
  differs=[A, "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--json"])
a("plan-70b-pp4-vpp2", "plan", "--preset", "llama-3.1-70b", "--pp", "4", "--vpp", "2", "--tp", "8", "--gpu", "h100-80gb", "--json", out="json")
a("plan-uneven-split-vpp", "plan", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "20,12", "--gpu", "h100-80gb", "--zero", "3", "--dp", "8", "--json", out="json")
a("fit-budget-and-gpu-cfg", "fit", *G, "--config", D + "m_gpumem_bytes1.json", "--gpu", "h100-80gb", "--json", out="json")
# O. --csv / --json on each command
for cmd, extra in [("explain", []), ("fit", ["--gpu", "h100-80gb"]), ("plan", ["--gpu", "h100-80gb"]), ("sweep", [])]:
    a(f"csv-on-{cmd}", cmd, *G, *extra, "--csv", expect=R)
    a(f"json-on-{cmd}", cmd, *G, *extra, "--json", expect=OK, out="json")
a("csv-twice-timeline", "timeline", *G, "--csv", "--csv", expect=OK)
a("csv-on-presets-with-json", "presets", "--csv", "--json", expect=R)
a("json-eq-on-presets", "presets", "--json=1", expect=R)
a("json-error-with-ctrl-value", "estimate", *G, "--dtype", "\x1b[31mbf16\x07", "--json", expect=R, out="json")
a("view-not-a-cli-command", "view", *G, expect=R)
# P. flag repetitions and =forms
a("seq-same-twice-eq", "estimate", *G, "--seq", "512", "--seq=512", expect=OK)
a("seq-two-values-eq", "estimate", *G, "--seq=512", "--seq=1024", expect=R)
a("seq-512-and-512.0", "estimate", *G, "--seq", "512", "--seq", "512.0", expect=OK)
a("tp-two-values-mixed", "estimate", *G, "--tp", "2", "--tp=4", expect=R)
a("sp-twice", "estimate", *G, "--sp", "--sp", expect=OK)
a("offload-twice", "estimate", *G, "--offload", "--offload", expect=OK)
a("no-master-weights-twice", "estimate", *G, "--no-master-weights", "--no-master-weights", expect=OK)
a("preset-eq-twice", "estimate", "--preset=gpt2", "--preset=gpt2", expect=R)
a("model-eq-twice", "estimate", "--model=" + TINY, "--model=" + TINY, "--seq", "16", expect=R)
a("config-eq-twice-same", "estimate", *G, "--config=" + D + "m_seq512.json", "--config=" + D + "m_seq512.json", expect=OK)
a("gpumem-eq-and-budget-eq", "estimate", *G, "--gpu-memory=1GiB", "--budget=1GiB", expect=R)
a("custom-keep-eq-twice", "estimate", *G, "--recompute=custom", "--custom-keep=attn.q", "--custom-keep=attn.q", expect=R)
a("sweep-mb-eq-twice", "sweep", *G, "--sweep-micro-batches=1", "--sweep-micro-batches=1", expect=R)
a("layer-split-eq", "estimate", *G, "--layer-split=6,6", "--pp=2", "--json", expect=OK, out="json")
a("sp-eq-true", "estimate", *G, "--sp=true", expect=R)
a("csv-eq-yes", "timeline", *G, "--csv=yes", expect=R)
a("help-eq", "estimate", "--help=1", expect=R)
a("no-master-eq-false", "estimate", *G, "--no-master-weights=false", expect=R)
a("gpu-eq-and-space-same", "estimate", *G, "--gpu=h100-80gb", "--gpu", "h100-80gb", expect=OK)
a("recompute-eq-every", "estimate", *G, "--recompute=every:2", "--json", expect=OK, out="json")
a("bare-double-dash", "estimate", *G, "--", expect=R)
a("eq-without-name", "estimate", *G, "--=5", expect=R)
a("value-is-double-dash", "estimate", *G, "--seq", "--", expect=R)
a("dash-dash-first", "--", "estimate", *G, expect=R)
a("flags-before-command-word", "--preset", "gpt2", "estimate", expect=R)
a("dropout-eq-twice-same", "estimate", *G, "--dropout=0.1", "--dropout", "0.1", expect=OK)
# Q. config merges with aliases
a("merge-ga4-mb8", "estimate", *G, "--config", D + "m_ga4.json", "--config", D + "m_mb8.json", expect=R)
a("merge-ga4-mb4", "estimate", *G, "--config", D + "m_ga4.json", "--config", D + "m_mb4.json", expect=OK)
a("merge-dropout-attn0", "estimate", *L8, "--seq", "1024", "--config", D + "m_drop01.json", "--config", D + "m_attn0.json", expect=R,
  note="dropout 0.1 in one file, attention_dropout 0 in another: which rate?")
a("cfg-dropout-and-attn0-one-object", "estimate", *L8, "--seq", "1024", "--config", D + "m_drop01_attn0.json", expect=R)
a("cfg-dropout0-and-hidden01", "estimate", *L8, "--seq", "1024", "--config", D + "m_drop0_hid01.json", expect=R)
a("flags-dropout-and-attn0", "estimate", *L8, "--seq", "1024", "--dropout", "0.1", "--attention-dropout", "0", expect=R)
a("flags-dropout-overridden-both", "estimate", *L8, "--seq", "1024", "--dropout=0.1", "--attention-dropout=0.0", "--hidden-dropout", "0", expect=R,
  note="--dropout 0.1 has no effect at all")
a("cfg-dropout-consistent", "estimate", *G, "--config", D + "m_drop01_consistent.json", expect=OK)
a("merge-gpumem-and-bytes", "estimate", *G, "--config", D + "m_gpumem80.json", "--config", D + "m_gpumem_bytes80.json", expect=R)
a("merge-gpumem-file-flag-overrides", "estimate", *G, "--config", D + "m_gpumem80.json", "--gpu-memory", "40GiB", "--json", expect=OK, out="json", jcheck="budget_40GiB")
a("merge-bytes-file-budget-flag", "estimate", *G, "--config", D + "m_gpumem_bytes1.json", "--budget", "1GiB", "--json", expect=OK, out="json", jcheck="budget_1GiB")
a("merge-mb8-file-ga-flag", "estimate", *G, "--config", D + "m_mb8.json", "--grad-accum", "4", "--json", expect=OK, out="json", jcheck="ga_4")
a("merge-seq512-and-512.0", "estimate", *G, "--config", D + "m_seq512.json", "--config", D + "m_seq512f.json", expect=OK)
a("merge-seq512-and-str", "estimate", *G, "--config", D + "m_seq512.json", "--config", D + "m_seq512s.json", expect=R)
a("merge-gpu-conflict", "estimate", *G, "--config", D + "m_gpu_h100.json", "--config", D + "m_gpu_b200.json", expect=R)
a("merge-hidden-file-dropout-flag", "estimate", *G, "--config", D + "m_hid01.json", "--dropout", "0.2", "--json", expect=OK, out="json", jcheck="hid_0.2")
a("merge-empty-object", "estimate", *G, "--config", D + "m_empty.json", expect=OK)
a("config-directory", "estimate", *G, "--config", D, expect=R)
a("config-dev-stdin", "estimate", *G, "--config", "/dev/stdin", stdin=D + "m_seq512.json", note="a pipe/regular file on stdin")
# R. layer_split with pp and vpp
a("split-pp2-vpp2-7-5", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "7,5", "--json", expect=OK, out="json")
a("split-pp2-vpp2-11-1", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "11,1", expect=R)
a("split-pp2-vpp2-2-10", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "2,10", expect=OK)
a("split-pp3-12-0-0", "estimate", *G, "--pp", "3", "--layer-split", "12,0,0", expect=R)
a("split-pp3-vpp2-4-4-4", "estimate", *G, "--pp", "3", "--vpp", "2", "--micro-batches", "6", "--layer-split", "4,4,4", expect=OK)
a("split-pp2-vpp6", "estimate", *G, "--pp", "2", "--vpp", "6", "--micro-batches", "2", "--layer-split", "6,6", expect=OK)
a("split-pp2-vpp7", "estimate", *G, "--pp", "2", "--vpp", "7", "--micro-batches", "2", "--layer-split", "6,6", expect=R)
a("split-uint64max", "estimate", *G, "--pp", "2", "--layer-split", "18446744073709551615,1", expect=R)
a("split-pp12-ones", "estimate", *G, "--pp", "12", "--layer-split", ",".join(["1"] * 12), expect=OK)
a("split-stack-kinds", "estimate", "--model", STACK2, "--seq", "16", "--pp", "2", "--layer-split", "1,1", "--json", expect=OK, out="json")
a("split-timeline-uneven-every2", "timeline", *L8, "--pp", "4", "--layer-split", "5,9,9,9", "--recompute", "every:2", "--micro-batches", "8", "--csv", expect=OK)
a("split-without-vpp-uneven-pp-not-dividing", "estimate", *G, "--pp", "5", "--layer-split", "3,3,2,2,2", expect=OK,
  note="pp=5 does not divide 12 but layer_split makes it valid")
# S. Hugging Face configs
HFB = lambda f: ["estimate", "--model", D + f, "--seq", "16", "--json"]
a("hf-llama-quantization-config", *HFB("hf_quant.json"), out="json", warn_or_reject="quantization_config",
  note="4-bit weights change static memory")
a("hf-llama-attn-impl-flash", *HFB("hf_attn_impl_flash.json"), out="json", warn_or_reject="_attn_implementation",
  note="flash vs eager changes activation memory; default attention is eager")
a("hf-llama-attn-implementation", *HFB("hf_attn_impl2.json"), out="json", warn_or_reject="attn_implementation")
a("hf-gpt2-reorder-upcast", *HFB("hf_gpt2_upcast.json"), out="json", warn_or_reject="reorder_and_upcast_attn",
  note="fp32 attention scores in eager attention")
a("hf-mixtral", *HFB("hf_mixtral.json"), expect=OK, out="json")
a("hf-mixtral-two-expert-counts", *HFB("hf_mixtral_both_counts.json"), expect=R, out="json", note="num_local_experts 4 vs num_experts 8")
a("hf-mixtral-num-experts-only", *HFB("hf_mixtral_num_experts_only.json"), expect=R, out="json")
a("hf-qwen2moe", *HFB("hf_qwen2moe.json"), expect=OK, out="json")
a("hf-qwen2moe-two-expert-counts", *HFB("hf_qwen2moe_both_counts.json"), expect=R, out="json", note="num_experts 8 (its key) vs num_local_experts 4")
a("hf-qwen2moe-sparse-step3-no-moe-layer", *HFB("hf_qwen2moe_sparse3.json"), out="json")
a("hf-qwen2moe-mlp-only-1", *HFB("hf_qwen2moe_mlponly1.json"), expect=R,  # round 4: qwen2_moe without shared_expert_intermediate_size refused
  out="json", differs=[A, *HFB("hf_qwen2moe.json")])
a("ours-topk-without-experts", *HFB("ours_topk_no_experts.json"), expect=R, out="json")
a("ours-moe-inter-without-experts", *HFB("ours_moe_inter_no_experts.json"), expect=R, out="json")
a("ours-capacity-without-experts", *HFB("ours_capacity_no_experts.json"), expect=R, out="json")
a("ours-shared-without-experts", *HFB("ours_shared_no_experts.json"), expect=R, out="json")
a("hf-mistral-sliding-window", *HFB("hf_mistral_sw.json"), expect=OK, out="json")
a("hf-qwen2-sliding-window", *HFB("hf_qwen2_sw.json"), expect=OK, out="json")
a("hf-gpt2-n-inner-null", *HFB("hf_gpt2_ninner_null.json"), expect=OK, out="json", same=[A, *HFB("hf_gpt2.json")])
a("hf-gpt2-quick-gelu", *HFB("hf_gpt2_quick_gelu.json"), out="json")
a("hf-gpt2-gelu-new", *HFB("hf_gpt2_gelu_new.json"), expect=OK, out="json")
for fam in ["phi", "phi3", "gemma", "gemma2", "qwen3", "falcon", "LlamaForCausalLM", "deepseek_v3"]:
    a(f"hf-unsupported-{fam}", *HFB(f"hf_{fam}.json"), expect=(ANY if fam in ("phi3", "qwen3", "gemma2") else R)  # round 4: gemma2 supported
     , out="json",
      note=("round 3: model_type now supported" if fam in ("phi3", "qwen3") else ""))
a("hf-llama-head-dim-32", *HFB("hf_llama_headdim32.json"), expect=OK, out="json", differs=[A, *HFB("hf_llama.json")])
a("hf-llama-kv3", *HFB("hf_llama_kv3.json"), expect=R, out="json")
a("hf-llama-tie", *HFB("hf_llama_tie.json"), expect=OK, out="json", differs=[A, *HFB("hf_llama.json")])
a("hf-llama-mlp-bias", *HFB("hf_llama_mlp_bias.json"), expect=OK, out="json", differs=[A, *HFB("hf_llama.json")])
a("hf-llama-unknown-key-warned", *HFB("hf_llama_unknown.json"), expect=OK, out="json", warn_or_reject="foo_memory_knob")
a("hf-llama-unknown-key-table", "estimate", "--model", D + "hf_llama_unknown.json", "--seq", "16", expect=OK, jcheck="table_mentions_foo")
a("hf-llama-topk-dense", *HFB("hf_llama_topk.json"), out="json")
# T. actmem-validate
VT = ["--model", TINY, "--seq", "16"]
v("v-exec-eq-twice-same", "--executor=cpu", "--executor=cpu", *VT, expect=R)
v("v-exec-eq-empty", "--executor=", *VT, expect=R)
v("v-exec-eq-extra-eq", "--executor=cpu=x", *VT, expect=R)
v("v-exec-leading-space", "--executor", " cpu", *VT, expect=R)
v("v-exec-gpu", "--executor", "gpu", *VT, expect=R)
v("v-exec-hip-json", "--executor", "hip", *VT, "--json", expect=R, out="json")
v("v-exec-cuda-eq", "--executor=cuda", *VT, note="no CUDA build here: 2 (not built in) or 77")
v("v-seed-max-eq", "--executor=cpu", "--seed=18446744073709551615", *VT, "--json", expect=OK, out="json")
v("v-seed-twice-forms", "--seed", "18446744073709551615", "--seed=1", *VT, expect=R)
v("v-seed-20-digits-leading-zeros", "--seed=00000000000000000001", *VT, expect=OK)
v("v-seed-21-digits-leading-zeros", "--seed=000000000000000000001", *VT, note="value 1 written with 21 digits")
v("v-seed-empty-eq", "--seed=", *VT, expect=R)
v("v-seed-neg-zero", "--seed", "-0", *VT, expect=R)
v("v-seed-exp", "--seed", "1e3", *VT, expect=R)
v("v-seed-space", "--seed", " 1", *VT, expect=R)
v("v-seed-2p64-eq", "--seed=18446744073709551616", *VT, expect=R)
v("v-fd-bound-plus-1", "--model", MID, "--seq", "64", "--fd-probes", "3406", expect=R, jcheck="fd_most_851",
  note="4*work = 4*64*2*(128*384+4*32*64) = 29,360,128 per probe; round 3: 2.5e10 / that = 851")
v("v-fd-4096-on-mid", "--model", MID, "--seq", "64", "--fd-probes=4096", expect=R)
v("v-fd-4096-on-tiny", "--fd-probes", "4096", *VT, expect=OK)
v("v-fd-zero-eq", "--fd-probes=0", *VT, expect=OK)
v("v-fd-neg", "--fd-probes=-1", *VT, expect=R)
v("v-fd-twice-same", "--fd-probes", "2", "--fd-probes", "2", *VT, expect=R)
v("v-fd-big-model-default-shrinks-refuse-24", "--model", D + "v_big_work.json", "--seq", "512", "--fd-probes", "24", expect=R,
  note="4*work = 8.59e9 per probe: at most 11")
v("v-ref-eq-upper", "--reference=ON", *VT, expect=R)
v("v-ref-eq-on", "--reference=on", *VT, expect=OK)
v("v-ref-off", "--reference", "off", *VT, expect=OK)
v("v-json-eq", "--json=1", *VT, expect=R)
v("v-help-eq", "--help=1", expect=R)
v("v-dash-h", "-h", expect=OK)
v("v-gpu-flag", "--gpu", "h100-80gb", *VT, "--json", out="json", jcheck="v_gpu_used", expect=R,
  note="a GPU or budget on the validator: used or refused?")
v("v-gpu-memory-1B", "--gpu-memory", "1B", *VT, "--json", out="json", jcheck="v_gpu_used", expect=R)
v("v-grad-accum-2", "--grad-accum", "2", *VT, expect=R)
v("v-micro-batches-1", "--micro-batches", "1", *VT, expect=OK)
v("v-micro-batches-2", "--micro-batches", "2", *VT, expect=R)
v("v-dtype-bf16-cpu", "--dtype", "bf16", *VT, expect=R)
v("v-dtype-fp32-param-fp32", "--dtype", "fp32", "--param-dtype", "fp32", *VT, expect=OK)
v("v-param-dtype-bf16", "--param-dtype", "bf16", *VT, expect=R)
v("v-pattern-X", "--recompute", "layers:KX", "--custom-keep", "attn.q", *VT, expect=R)
v("v-every-1", "--recompute", "every:1", *VT, expect=OK)
v("v-pattern-KSCR", "--recompute=layers:KSCR", *VT, expect=R, note="round 6: 4 letters > the 2-layer chunk is refused (intended change)")
v("v-dropout", "--dropout", "0.1", *VT)
v("v-hf-gpt2", "--model", D + "v_gpt2_hf.json", "--seq", "16", expect=OK)
v("v-hf-llama", "--model", D + "v_llama_hf.json", "--seq", "16", expect=OK)
v("v-hf-llama-quant", "--model", D + "v_llama_quant.json", "--seq", "16")
v("v-config-frag5", "--config", D + "cfg_frag5.json", *VT, expect=R)
v("v-sweep-flag", "--sweep-seqs", "16", *VT, expect=R)
v("v-model-and-preset", *VT, "--preset", "gpt2", expect=R)
v("v-schedule-gpipe", "--schedule", "gpipe", *VT)
v("v-layer-split-eq", "--layer-split=2", *VT, expect=OK)
v("v-sdpa", "--attention", "sdpa_math", *VT, expect=R)
v("v-flash", "--attention", "flash", *VT, expect=OK)
v("v-fd-at-bound-mid", "--model", MID, "--seq", "64", "--fd-probes", "3405", limit_s=120.0,
  note="explicit count at the size-scaled bound (~1e11 multiply-adds)")
v("v-gpt2-preset-seq16", "--preset", "gpt2", "--seq", "16", limit_s=120.0, note="a real preset, default 24 probes")


# U. follow-ups (added after the first pass)
a("timeline-gpu-table", "timeline", *G, "--gpu", "rtx-4090", differs=[A, "timeline", *G], note="table: does the GPU show?")
a("explain-gpu-table", "explain", *G, "--gpu", "rtx-4090", differs=[A, "explain", *G])
a("estimate-gpu-table", "estimate", *G, "--gpu", "rtx-4090", differs=[A, "estimate", *G])
a("fit-offload-used", "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--offload", "--json", out="json",
  differs=[A, "fit", "--preset", "llama-3.1-8b", "--gpu", "h100-80gb", "--zero", "3", "--dp", "64", "--json"])
a("sweep-recompute-used", "sweep", *G, "--recompute", "full", "--json", out="json", differs=[A, "sweep", *G, "--json"])
a("sweep-offload-used", "sweep", *G, "--offload", "--json", out="json", differs=[A, "sweep", *G, "--json"])
v("v-gpt2-preset-no-fd-no-ref", "--preset", "gpt2", "--seq", "16", "--fd-probes", "0", "--reference", "off", limit_s=120.0,
  note="the same preset without finite differences or reference")

# ------------------------------------------------------------------ checks
CTRL_OUT = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
CTRL_ERR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]")
_base_cache = {}
def run_plain(argv):
    k = tuple(argv)
    if k not in _base_cache:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
        _base_cache[k] = (p.returncode, p.stdout)
    return _base_cache[k]

def jload(out):
    try: return json.loads(out)
    except Exception: return None

def check(c, rc, wall, rss, out, err, texts):
    fails = []
    exe = c["argv"][0]
    okcodes = {0, 2} if exe == A else {0, 1, 2, 77}
    if rc not in okcodes: fails.append(f"exit code {rc}")
    if rc < 0 or rc >= 128: fails.append("crash/signal")
    if wall > c["limit_s"]: fails.append(f"wall {wall:.2f}s > {c['limit_s']}s")
    if rss > 500 * 1024: fails.append(f"peak RSS {rss/1024:.0f} MB > 500 MB")
    es = err.decode("utf-8", "replace")
    ls = [l for l in es.split("\n") if l != ""]
    prefix = "actmem: error: " if exe == A else "actmem-validate: error: "
    if rc == 2:
        if len(ls) != 1: fails.append(f"exit 2 with {len(ls)} stderr lines")
        elif not ls[0].startswith(prefix): fails.append("stderr line lacks the error prefix")
    elif rc == 0 and err: fails.append("exit 0 with stderr text")
    if CTRL_ERR.search(es): fails.append("stderr has a raw control/C1 char")
    try: err.decode("utf-8")
    except UnicodeDecodeError: fails.append("stderr has invalid UTF-8")
    uvals = [x for x in c["argv"][1:] if len(x) > 80] + [t for t in texts if len(t) > 80]
    if uvals and len(es) > 80:
        for i in range(0, min(len(es), 4000) - 80):
            win = es[i:i + 81]
            if any(win in u for u in uvals):
                fails.append("stderr echoes >80 chars of a user value"); break
    if CTRL_OUT.search(out): fails.append("stdout has a raw control/C1/DEL char")
    if c["expect"] == R and rc == 0: fails.append("exit 0 where rejection expected")
    if c["expect"] == OK and rc != 0: fails.append("rejected where acceptance expected")
    d = None
    if c["out"] == "json" and out:
        d = jload(out)
        if d is None: fails.append("stdout not JSON")
    if c["out"] == "jsonl":
        got = []
        for n, l in enumerate(out.split(b"\n")):
            if not l: continue
            j = jload(l)
            if j is None: fails.append(f"stdout line {n} not JSON"); break
            if not isinstance(j, dict) or "ok" not in j: fails.append(f"answer {n} has no ok"); break
            got.append("ok" if j.get("ok") else "err")
            if not j.get("ok"):
                msg = j.get("error", {}).get("message", "")
                if len(msg) > 80 and any(msg[i:i + 81] in t for t in texts for i in range(0, min(len(msg), 2000) - 80)):
                    fails.append(f"answer {n} echoes >80 chars of the input"); break
        if c["lines"] is not None:
            exp = c["lines"]
            if len(got) != len(exp) or any(e != "*" and e != g for e, g in zip(exp, got)):
                fails.append(f"per-line answers {got}, expected {exp}")
    if c["differs"] and rc == 0:
        brc, bout = run_plain(c["differs"])
        if brc == 0 and bout == out: fails.append("answer identical to the baseline without the setting (silently ignored)")
    if c["same"] and rc == 0:
        brc, bout = run_plain(c["same"])
        if bout != out: fails.append("answer differs from the equivalent input")
    if c["warn_or_reject"] and rc == 0:
        k = c["warn_or_reject"]
        ws = (d or {}).get("warnings", [])
        if not any(k in x for x in ws):
            fails.append(f"key {k} accepted without a warning or any effect (silently ignored)")
    jc = c["jcheck"]
    if jc and rc == 0:
        if jc == "schedule_interleaved":
            s = (d or {}).get("config", {}).get("schedule")
            if s != "interleaved": fails.append(f"config.schedule in the answer is {s!r}")
        elif jc.startswith("budget_"):
            want = {"budget_1GiB": 1 << 30, "budget_40GiB": 40 << 30}[jc]
            got = (d or {}).get("budget_bytes", (d or {}).get("gpu", {}).get("memory_bytes"))
            if got != want: fails.append(f"budget {got}, expected {want}")
        elif jc == "ga_4":
            if (d or {}).get("config", {}).get("grad_accum") != 4: fails.append("grad_accum not 4")
        elif jc == "hid_0.2":
            if (d or {}).get("config", {}).get("hidden_dropout") != 0.2: fails.append("hidden_dropout not 0.2")
        elif jc == "table_mentions_foo":
            if b"foo_memory_knob" not in out: fails.append("table output does not show the ignored-key warning")
        elif jc == "v_gpu_used":
            if d is not None and not any(k in d for k in ("gpu", "fits", "budget_bytes", "headroom_bytes")):
                fails.append("validator accepted a GPU/budget and its report never uses it (silently ignored)")
    if jc == "fd_most_851" and rc == 2 and "159" not in es:  # round 4: 1.5e10 / (4*23,478,272) = 159
        fails.append("bound in the message differs from 159")
    return fails

def main():
    only = set(sys.argv[1:])
    res = open(OUT + (".partial" if only else ""), "w")
    nfail = 0; n = 0
    for c in CASES:
        if only and c["id"] not in only: continue
        n += 1
        tf = "/tmp/hostile6/time2.out"
        stdin = open(c["stdin"], "rb") if c["stdin"] else subprocess.DEVNULL
        t0 = time.time()
        tmo = 130 if c["argv"][0] == V else 60
        try:
            p = subprocess.run(["/usr/bin/time", "-o", tf, "-f", "%e %M", *c["argv"]], stdin=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=tmo)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = -999, b"", b"TIMEOUT"
        wall_py = time.time() - t0
        try:
            tl = open(tf).read().strip().splitlines()
            last = tl[-1].split(); wall, rss = float(last[0]), int(last[1])
            if any("terminated by signal" in l for l in tl[:-1]): rc = 128 + int(tl[0].split()[-1])
        except Exception:
            wall, rss = wall_py, 0
        texts = []
        for x in c["argv"][1:]:
            x = x.split("=", 1)[1] if x.startswith("--") and "=" in x else x
            if x.startswith(D) and os.path.isfile(x) and os.path.getsize(x) < (1 << 21):
                texts.append(open(x, "rb").read().decode("utf-8", "replace"))
        fails = check(c, rc, wall, rss, out, err, texts)
        rec = dict(id=c["id"], step=2, cmd=shlex.join(c["argv"])[:600], cmd_len=len(shlex.join(c["argv"])), stdin=c["stdin"],
                   exit=rc, wall_s=wall, peak_rss_kb=rss, stdout_bytes=len(out), stdout_head=out[:300].decode("utf-8", "backslashreplace"),
                   stderr=err.decode("utf-8", "backslashreplace")[:1000], expect=c["expect"], note=c["note"], fails=fails)
        res.write(json.dumps(rec) + "\n"); res.flush()
        if fails: nfail += 1
        print(f"{'FAIL' if fails else 'ok  '} {c['id']:44s} rc={rc:<4} {wall:6.2f}s {rss//1024:5d}MB out={len(out):<9} {'; '.join(fails)} | {err.decode('utf-8','backslashreplace')[:150].strip()}", flush=True)
    print(f"TOTAL {n} cases, {nfail} with failures")
if __name__ == "__main__":
    main()
