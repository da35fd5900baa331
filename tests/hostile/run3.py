#!/usr/bin/env python3
"""Round 3, step 2: new hostile inputs aimed at what changed since round 2 (model_text, Python's
NaN/Infinity tokens, qwen3/qwen3_moe/phi3, C1/DEL in user strings, the new conflict/refusal rules
at their edges, the 2^19 pipeline-op bound, actmem-validate's new CPU bounds). Files are generated
under /tmp/hostile6/files/s2/. One JSON line per input in /tmp/hostile6/step2/results_step2.jsonl.
Usage: python3 run3.py [id ...]"""
import json, os, re, shlex, subprocess, sys, time

A = "/tmp/hostile6/bin/actmem"; V = "/tmp/hostile6/bin/actmem-validate"
D = "/tmp/hostile6/files/s2/"
OUT = "/tmp/hostile6/step2/results_step2.jsonl"
os.makedirs(D, exist_ok=True); os.makedirs(os.path.dirname(OUT), exist_ok=True)
R, OK, ANY = "reject", "accept", "any"

def w(name, data):
    p = D + name
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return p
def wj(name, obj): return w(name, json.dumps(obj))
def lines(name, *ls):
    return w(name, "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in ls))

C1 = "A\u009b31mB\u007fC\u0085D\u0080E\u009f"
tiny = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128,
        "vocab_size": 100, "max_position_embeddings": 128}
T = json.dumps(tiny)
TINY = wj("tiny.json", tiny)
hfl = dict(tiny, model_type="llama"); HFL = wj("hfl.json", hfl)
q3 = dict(tiny, model_type="qwen3", num_key_value_heads=2, head_dim=32); Q3 = wj("q3.json", q3)
q3m = dict(q3, model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
Q3M = wj("q3m.json", q3m)
p3 = dict(tiny, model_type="phi3", resid_pdrop=0.0, embd_pdrop=0.0); P3 = wj("p3.json", p3)
g2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 128}
def body(obj): return json.dumps(obj)[1:]

# ------------------------------------------------------------------ A. model_text (requests)
def mt(text, **k): return dict(model_text=text, summary=True, **k)
def rq(name, *ls): return lines(name, *ls)
rq("mt_valid_vs_model.txt", mt(T), dict(model=tiny, summary=True))
rq("mt_valid_hf_qwen3.txt", mt(json.dumps(q3)))
rq("mt_empty.txt", mt(""))
rq("mt_ws.txt", mt("  \n\t"))
rq("mt_array.txt", mt("[]"))
rq("mt_null_text.txt", mt("null"))
rq("mt_null_value.txt", dict(model_text=None, summary=True))
rq("mt_number_value.txt", dict(model_text=5, summary=True))
rq("mt_object_value.txt", dict(model_text=tiny, summary=True))
rq("mt_truncated.txt", mt(T[:40]))
rq("mt_trailing_garbage.txt", mt(T + " x"))
rq("mt_two_objects.txt", mt(T + T))
rq("mt_dup_top.txt", mt('{"hidden_size":64,' + T[1:]))
rq("mt_dup_meta.txt", mt('{"metadata":{"name":"a","name":"a"},' + T[1:]))
w("mt_dup_request_key.txt", '{"model_text":' + json.dumps(T) + ',"model_text":' + json.dumps(T) + ',"summary":true}\n')
rq("mt_nested_model_text.txt", mt(json.dumps({"model_text": T})))
rq("mt_is_request.txt", mt('{"preset":"gpt2"}'))
def nest(n): return "[" * n + "]" * n
rq("mt_depth64.txt", mt('{"metadata":{"notes":' + nest(62) + '},' + T[1:]))
rq("mt_depth65.txt", mt('{"metadata":{"notes":' + nest(63) + '},' + T[1:]))
nvals = (1 << 18) - 9
rq("mt_vals_2p18.txt", mt('{"metadata":{"notes":[' + ",".join(["0"] * nvals) + ']},' + T[1:]))
rq("mt_vals_2p18p1.txt", mt('{"metadata":{"notes":[' + ",".join(["0"] * (nvals + 1)) + ']},' + T[1:]))
big = (16 << 20) - 400
rq("mt_huge_string.txt", mt('{"metadata":{"notes":"' + "n" * big + '"},' + T[1:]))
# \\u0041 escapes: a 16 MiB line; model_text holds \u0041 escapes its own parse decodes to "A"
pad = (16 << 20) - 400
w("mt_huge_escaped.txt", '{"summary":true,"model_text":"{\\"metadata\\":{\\"notes\\":\\"' + "\\\\u0041" * (pad // 7) + '\\"},'
  + T[1:].replace('"', '\\"') + '"}\n')
rq("mt_huge_with_nan.txt", mt(json.dumps(dict(hfl, _name_or_path="p" * ((16 << 20) - 600)))[:-1] + ', "rope_theta": NaN}'))
rq("mt_nan_used.txt", mt(json.dumps({k: v for k, v in tiny.items() if k != "vocab_size"})[:-1] + ', "vocab_size": NaN}'))
rq("mt_nan_used2.txt", mt(json.dumps({k: v for k, v in tiny.items() if k != "hidden_size"})[:-1] + ', "hidden_size": NaN}'))
rq("mt_inf_kv_hf.txt", mt(json.dumps(hfl)[:-1] + ', "num_key_value_heads": Infinity}'))
rq("mt_nan_unused_hf.txt", mt(json.dumps(hfl)[:-1] + ', "rope_scaling": {"factor": NaN}, "rope_theta": Infinity, "initializer_range": -Infinity}'))
rq("mt_nan_unused_hf_vs_plain.txt", mt(json.dumps(hfl)[:-1] + ', "rope_theta": Infinity}'), mt(json.dumps(hfl)[:-1] + ', "rope_theta": 10000.0}'))
rq("mt_nan_in_notes.txt", mt('{"metadata":{"notes":[NaN, Infinity]},' + T[1:]))
rq("mt_with_preset.txt", mt(T, preset="gpt2"))
rq("mt_with_model.txt", mt(T, model=tiny))
rq("mt_with_example.txt", dict(model_text=T, example="seed000-flash-7b"))
rq("mt_nul.txt", mt(T[:-1] + ', "x\u0000": 1}'))
rq("mt_bom.txt", mt("\ufeff" + T))
rq("mt_c1_name.txt", mt(json.dumps(dict(tiny, metadata={"name": C1}))), dict(command="view", model_text=json.dumps(dict(tiny, metadata={"name": C1}))))
rq("mt_c1_hf_key.txt", dict(model_text=json.dumps(dict(hfl, **{"k" + C1: 1}))))
w("mt_lone_surrogate.txt", '{"summary":true,"model_text":"{\\"metadata\\":{\\"name\\":\\"\\ud800\\"},' + T[1:].replace('"', '\\"') + '"}\n')
rq("mt_err_byte_nan.txt", mt('{"a": NaN, "b": x}'), mt('{"a": "N", "b": x}'))
rq("mt_err_byte_three.txt", mt('[NaN,Infinity,-Infinity,x]'), mt('["N","Infini","-Infini",x]'))
rq("mt_key_nan_space.txt", mt(json.dumps(hfl)[:-1] + ', NaN : 1}'))
rq("mt_sweep_view.txt", dict(command="sweep", model_text=T), dict(command="view", model_text=T),
   dict(command="timeline", model_text=T, events="none"), dict(command="plan", model_text=T, gpu="h100-80gb"))

# ------------------------------------------------------------------ B. NaN / Infinity tokens
w("b_nan_in_strings.json", '{"metadata":{"name":"NaN Infinity -Infinity"},' + T[1:])
w("b_nan_escaped_quote.json", '{"metadata":{"name":"a\\"NaN"},' + T[1:])
w("b_key_at_start.json", '{NaN : 1,' + T[1:])
w("b_key_after_comma_ours.json", T[:-1] + ', NaN : 1}')
w("b_key_after_comma_hf.json", json.dumps(hfl)[:-1] + ', NaN : 1}')
w("b_cfg_key_inf.json", '{"seq": 16, Infinity : 1}')
w("b_after_newlines.json", json.dumps({k: v for k, v in tiny.items() if k != "vocab_size"})[:-1] + ',"vocab_size":\n\t  NaN\n}')
w("b_neg_nan.json", json.dumps(hfl)[:-1] + ', "rope_theta": -NaN}')
w("b_plus_inf.json", json.dumps(hfl)[:-1] + ', "rope_theta": +Infinity}')
w("b_lower_inf.json", json.dumps(hfl)[:-1] + ', "rope_theta": infinity}')
w("b_nanx.json", json.dumps(hfl)[:-1] + ', "rope_theta": NaNx}')
w("b_infx.json", json.dumps(hfl)[:-1] + ', "rope_theta": InfinityX}')
w("b_nan_colon.json", json.dumps(hfl)[:-1] + ', "rope_theta": [NaN:1]}')
w("b_lower_nan.json", json.dumps(hfl)[:-1] + ', "rope_theta": nan}')
w("b_no_space_close.json", json.dumps(hfl)[:-1] + ',"rope_theta":NaN}')
w("b_in_array_unused.json", json.dumps(hfl)[:-1] + ',"x_unused":[1,NaN,-Infinity,Infinity]}')
w("b_whole_nan.json", "NaN")
w("b_bom_nan.json", b"\xef\xbb\xbfNaN")
w("b_cfg_seq_neginf.json", '{"seq": -Infinity}')
for k, v in [("gpu", "NaN"), ("dtype", "Infinity"), ("recompute", "NaN"), ("attention", "-Infinity"), ("sp", "NaN"),
             ("offload", "Infinity"), ("fragmentation_pct", "Infinity"), ("gpu_memory_bytes", "NaN"),
             ("grad_bucket_bytes", "Infinity"), ("schedule", "NaN"), ("master_weights", "NaN"), ("gpu_memory", "Infinity")]:
    w(f"b_cfg_{k}.json", '{"%s": %s}' % (k, v))
w("b_cfg_split_nan.json", '{"pp": 2, "layer_split": [NaN, 6]}')
w("b_cfg_keep_nan.json", '{"recompute": "custom", "custom_keep": [NaN]}')
w("b_cfg_err_byte_nan.json", '{"seq": NaN, "tp": x}')
w("b_cfg_err_byte_str.json", '{"seq": "N", "tp": x}')
for name, base, k, v in [("kv", hfl, "num_key_value_heads", "NaN"), ("headdim", hfl, "head_dim", "NaN"),
                         ("ninner", g2, "n_inner", "NaN"), ("tie", hfl, "tie_word_embeddings", "Infinity"),
                         ("quant", hfl, "quantization_config", "NaN"), ("attnimpl", hfl, "attn_implementation", "NaN"),
                         ("upcast", g2, "reorder_and_upcast_attn", "NaN"),
                         ("pubparams", tiny, "metadata", '{"published_params": NaN}'),
                         ("kindffn", tiny, "layer_kinds", '{"b": {"intermediate_size": NaN}}, "layer_stack": ["base", "b"]'),
                         ("sliding", dict(hfl, model_type="mistral"), "sliding_window", "NaN"),
                         ("maxwin", dict(hfl, model_type="qwen2"), "max_window_layers", "Infinity"),
                         ("torchdtype", hfl, "torch_dtype", "NaN"),
                         ("capacity", dict(hfl, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2), "capacity_factor", "Infinity"),
                         ("q2m_experts", dict(hfl, model_type="qwen2_moe", num_experts_per_tok=2, moe_intermediate_size=32), "num_experts", "-Infinity"),
                         ("q3m_mlponly", q3m, "mlp_only_layers", "[NaN]"), ("q3m_step", q3m, "decoder_sparse_step", "Infinity"),
                         ("q3_qknorm", q3, "qk_norm", "NaN"), ("p3_resid", p3, "resid_pdrop", "NaN"),
                         ("p3_embd", dict(p3, resid_pdrop=0.0), "embd_pdrop", "Infinity")]:
    b0 = {kk: vv for kk, vv in base.items() if kk != k}
    w(f"b_hf_{name}.json", json.dumps(b0)[:-1] + ', "%s": %s}' % (k, v))
w("b_many_nan_ok.json", json.dumps(hfl)[:-1] + ', "x_unused": [' + ",".join(["NaN"] * ((1 << 18) - 20)) + ']}')
w("b_many_nan_over.json", json.dumps(hfl)[:-1] + ', "x_unused": [' + ",".join(["NaN"] * (((16 << 20) - 300) // 4)) + ']}')
lines("b_req_tokens.txt",
      '{"preset":"gpt2","summary":NaN}', '{"command":NaN,"preset":"gpt2"}', '{"preset":"gpt2","gpu":NaN}',
      '{"command":"sweep","preset":"gpt2","sweep":{"seqs":[Infinity]}}', '{"command":"timeline","preset":"gpt2","events":NaN}',
      '{"command":"view","preset":"gpt2","stages":-Infinity}', '{"command":"timeline","preset":"gpt2","compact_events":NaN}',
      '{"example":NaN}', '{"preset":NaN}', '{"preset":"gpt2","config":NaN}', '{"preset":"gpt2","config":{"seq":16}, "model_text":NaN}')

# ------------------------------------------------------------------ C. qwen3 / qwen3_moe / phi3
def wm(name, obj, drop=()):
    return wj(name, {k: v for k, v in obj.items() if k not in drop})
wm("q3_no_headdim.json", q3, drop=("head_dim",))
for tag, v in [("0", 0), ("1", 1), ("7", 7), ("2p40", 1 << 40), ("2p40p1", (1 << 40) + 1), ("null", None), ("str", "32"),
               ("float", 32.0), ("neg", -1)]:
    wj(f"q3_hd_{tag}.json", dict(q3, head_dim=v))
w("q3_hd_1e400.json", json.dumps({k: v for k, v in q3.items() if k != "head_dim"})[:-1] + ', "head_dim": 1e400}')
wj("q3_qknorm_false.json", dict(q3, qk_norm=False))
wj("ours_qknorm_true.json", dict(tiny, qk_norm=True))
wj("ours_qknorm_str.json", dict(tiny, qk_norm="yes"))
wj("ours_qknorm_null.json", dict(tiny, qk_norm=None))
stack = dict(tiny, layer_kinds={"b": {"intermediate_size": 64}}, layer_stack=["base", "b"])
wj("stack_plain.json", stack)
wj("stack_kind_qknorm.json", dict(stack, layer_kinds={"b": {"intermediate_size": 64, "qk_norm": True}}))
wj("stack_kind_qknorm_str.json", dict(stack, layer_kinds={"b": {"intermediate_size": 64, "qk_norm": "yes"}}))
wj("g2_qknorm.json", dict(g2, qk_norm=True))
wm("q3m_no_experts.json", q3m, drop=("num_experts",))
wm("q3m_no_topk.json", q3m, drop=("num_experts_per_tok",))
wm("q3m_no_moe_inter.json", q3m, drop=("moe_intermediate_size",))
wj("q3m_moe_inter_128.json", dict(q3m, moe_intermediate_size=128))
for tag, v in [("oob", [2]), ("neg", [-1]), ("dup", [0, 0]), ("all", [0, 1]), ("str", "0"), ("null", None), ("float", [1.0]),
               ("2p64", [1 << 64])]:
    wj(f"q3m_mlponly_{tag}.json", dict(q3m, mlp_only_layers=v))
wj("q3m_mlponly_1.json", dict(q3m, mlp_only_layers=[1]))
for tag, v in [("0", 0), ("1", 1), ("2", 2), ("2p63", 1 << 63), ("neg", -1), ("1p5", 1.5), ("null", None)]:
    wj(f"q3m_step_{tag}.json", dict(q3m, decoder_sparse_step=v))
wj("q3m_counts_equal.json", dict(q3m, num_local_experts=4))
w("q3m_counts_int_float.json", json.dumps(q3m)[:-1] + ', "num_local_experts": 4.0}')
wj("q3m_counts_differ.json", dict(q3m, num_local_experts=8))
wj("q3m_stack_and_step.json", dict(q3m, decoder_sparse_step=2, layer_kinds={"b": {"intermediate_size": 64}}, layer_stack=["base", "b"]))
wm("q3m_no_inter_mlponly0.json", dict(q3m, mlp_only_layers=[0]), drop=("intermediate_size",))
q2m = dict(hfl, model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2)
wj("q2m_no_moe_inter.json", q2m); wj("q2m_moe_inter_128.json", dict(q2m, moe_intermediate_size=128))
wj("p3_embd_ne_resid.json", dict(p3, embd_pdrop=0.1))
wj("p3_embd_eq_resid.json", dict(p3, embd_pdrop=0.1, resid_pdrop=0.1))
wj("p3_hidden_conflict.json", dict(p3, embd_pdrop=0.1, resid_pdrop=0.1, hidden_dropout=0.0))
wj("p3_hidden_equal.json", dict(p3, embd_pdrop=0.1, resid_pdrop=0.1, hidden_dropout=0.1))
wm("p3_resid_only.json", dict(p3, resid_pdrop=0.1), drop=("embd_pdrop",))
wj("p3_attn_pdrop.json", dict(p3, attn_pdrop=0.1))
wm("p3_hidden_only.json", dict(p3, hidden_dropout=0.1), drop=("embd_pdrop", "resid_pdrop"))
wj("p3_n_embd.json", dict(p3, n_embd=64))
wj("p3_partial_rotary.json", dict(p3, partial_rotary_factor=0.75, original_max_position_embeddings=128))
wj("g2_hidden_conflict.json", dict(g2, resid_pdrop=0.1, embd_pdrop=0.1, hidden_dropout=0.0))
wj("p3_attn_and_dropout_cfg.json", {"dropout": 0.1})

# ------------------------------------------------------------------ D. C1 / DEL
kc = "k,\u009b\u007f\n\"q"
kindc1 = dict(tiny, metadata={"name": "N" + C1 + ",\"x\n", "source": "S\u0085\u007f", "published_params_source": "P\u009b\u007f"},
              layer_kinds={kc: {"intermediate_size": 64}}, layer_stack=["base", kc])
KC1 = wj("kindc1.json", kindc1)
HFC1 = wj("hf_c1_key.json", dict(hfl, **{"u" + C1: 1}))
P3C1 = wj("p3_c1_key.json", dict(p3, **{"\u007fv\u0085": 1}))
w("cfg_dup_c1_key.json", '{"s\\u009b\\u007f": 1, "s\\u009b\\u007f": 2}')
wj("kind_c1_bad_field.json", dict(tiny, layer_kinds={"b\u009b\u007f": {"intermediate_size": -1}}, layer_stack=["base", "b\u009b\u007f"]))
wj("hf_type_c1.json", dict(hfl, model_type="llama\u007f\u009b"))
wj("hf_act_c1.json", dict(hfl, hidden_act="silu\u0085\u007f"))
lines("req_c1.txt", {"command": "view", "model": kindc1}, {"model": dict(hfl, **{"u" + C1: 1})},
      {"command": "est\u009bimate\u007f", "preset": "gpt2"}, {"example": "seed\u009b\u007f"},
      {"preset": "gpt2", "gpu": "h100\u007f\u0085"}, {"preset": "gpt2", "config": {"dtype": "bf\u009b16"}},
      {"preset": "gpt2\u0080"}, {"command": "sweep", "model": kindc1, "gpu": "h100-80gb"})

# ------------------------------------------------------------------ E. conflict / refusal edges
wj("e_drop01.json", {"dropout": 0.1}); wj("e_attn01.json", {"attention_dropout": 0.1})
wj("e_drop01_attn01.json", {"dropout": 0.1, "attention_dropout": 0.1})
wj("e_drop01_attn02.json", {"dropout": 0.1, "attention_dropout": 0.2})
wj("mix_counts_eq.json", dict(hfl, model_type="mixtral", num_local_experts=4, num_experts=4, num_experts_per_tok=2))
w("mix_counts_int_float.json", json.dumps(dict(hfl, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2))[:-1] + ', "num_experts": 4.0}')
wj("mix_counts_str.json", dict(hfl, model_type="mixtral", num_local_experts=4, num_experts="4", num_experts_per_tok=2))
wj("dense_topk_null.json", dict(tiny, num_experts_per_tok=None))
wj("dense_topk_0.json", dict(tiny, num_experts_per_tok=0))
wj("dense_moeinter_null.json", dict(tiny, moe_intermediate_size=None, capacity_factor=None))
wj("hf_quant_null.json", dict(hfl, quantization_config=None))
wj("hf_quant_empty.json", dict(hfl, quantization_config={}))
wj("hf_attnimpl_null.json", dict(hfl, attn_implementation=None, _attn_implementation=None))
wj("hf_attnimpl_eager.json", dict(hfl, _attn_implementation="eager"))
wj("g2_upcast_false.json", dict(g2, reorder_and_upcast_attn=False, scale_attn_by_inverse_layer_idx=False))
wj("g2_scale_true.json", dict(g2, scale_attn_by_inverse_layer_idx=True))
wj("hfl_scale_true.json", dict(hfl, scale_attn_by_inverse_layer_idx=True))
wj("g2_upcast_null.json", dict(g2, reorder_and_upcast_attn=None))
lines("e_req_edges.txt",
      {"preset": "gpt2", "gpu": " "}, {"preset": "gpt2", "gpu": "", "config": {"gpu": ""}},
      {"preset": "gpt2", "config": {"dropout": 0.1, "attention_dropout": 0.2}},
      {"preset": "gpt2", "config": {"dropout": 0.1, "attention_dropout": 0.1, "hidden_dropout": 0.1}, "summary": True})
lines("e_req_sweep_mb1.txt", {"command": "sweep", "preset": "gpt2", "config": {"micro_batch": 1}})
lines("e_req_sweep_seq_eq.txt", {"command": "sweep", "preset": "gpt2", "config": {"seq": 64}, "sweep": {"seqs": [64]}})
lines("e_req_sweep_example.txt", {"command": "sweep", "example": "seed000-flash-7b"},
      {"command": "sweep", "preset": "llama-3.1-8b", "config": {"dtype": "bf16", "attention": "flash", "dropout": 0.0, "profile": "textbook"}})
lines("e_req_plan_example_rc.txt", {"command": "plan", "example": "seed000-full-checkpointing-70b", "gpu": "h100-80gb"},
      {"command": "plan", "preset": "llama-3.1-70b", "gpu": "h100-80gb",
       "config": {"micro_batch": 1, "seq": 4096, "dtype": "bf16", "attention": "eager", "attention_dropout": 0.1, "hidden_dropout": 0.0, "profile": "textbook"}})
lines("e_req_example_dropout.txt", {"example": "seed000-full-checkpointing-70b", "config": {"dropout": 0.05}})
lines("e_req_example_attn.txt", {"example": "seed000-flash-7b", "config": {"attention_dropout": 0.1}})
lines("e_req_plan_edges.txt", {"command": "plan", "preset": "gpt2", "gpu": "h100-80gb", "config": {"recompute": "none"}},
      {"command": "plan", "preset": "gpt2", "gpu": "h100-80gb", "config": {"offload": False}},
      {"command": "plan", "preset": "gpt2", "gpu": "h100-80gb", "config": {"custom_keep": []}})
L1024 = wj("layers_1024.json", dict(tiny, num_hidden_layers=1024))
lines("e_req_ops_bound.txt",
      {"command": "view", "stages": "all", "preset": "llama-3.1-405b", "config": {"pp": 126, "micro_batches": 4161, "gpu": "h100-80gb"}},
      {"command": "timeline", "events": "all_ops", "preset": "llama-3.1-405b", "config": {"micro_batches": 524288}},
      {"command": "timeline", "events": "all", "preset": "llama-3.1-405b", "config": {"micro_batches": 524289}})

# ------------------------------------------------------------------ F. validator
VCFG = wj("vcfg_fd0.json", {})
wj("v_work_under.json", {"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 2048,
                         "vocab_size": 50, "max_position_embeddings": 512})
wj("v_vocab.json", {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1, "intermediate_size": 128,
                    "vocab_size": 40000, "max_position_embeddings": 1024})
wj("v_vocab_over.json", {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1, "intermediate_size": 128,
                         "vocab_size": 42000, "max_position_embeddings": 1024})
wj("v_headdim.json", {"hidden_size": 64, "num_attention_heads": 8, "head_dim": 2048, "num_hidden_layers": 1, "intermediate_size": 128,
                      "vocab_size": 50, "max_position_embeddings": 1024})
wj("v_mid.json", {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 256,
                  "vocab_size": 50, "max_position_embeddings": 64})
vt = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 50, "max_position_embeddings": 16}
wj("v_q3.json", dict(vt, model_type="qwen3", head_dim=8, num_key_value_heads=2))
wj("v_p3.json", dict(vt, model_type="phi3"))
wj("v_q3m.json", dict(vt, model_type="qwen3_moe", head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16))
w("v_nan.json", json.dumps({k: v for k, v in vt.items() if k != "vocab_size"})[:-1] + ', "vocab_size": NaN}')
wj("v_c1.json", dict(vt, metadata={"name": C1}))
wj("v_ours_qknorm.json", dict(vt, qk_norm=True))

# ------------------------------------------------------------------ cases
CASES = []
def case(cid, argv, expect=ANY, out=None, stdin=None, note="", limit_s=None, lines=None, differs=None,
         same=None, fn=None, group="", tmo=None):
    if limit_s is None: limit_s = 120.0 if argv[0] == V else 2.0
    CASES.append(dict(id=cid, argv=argv, expect=expect, out=out, stdin=stdin, note=note, limit_s=limit_s,
                      lines=lines, differs=differs, same=same, fn=fn, group=group,
                      tmo=tmo or (int(os.environ.get("VTMO", "130")) if argv[0] == V else 60)))
def a(cid, *args, **kw): case(cid, [A, *args], **kw)
def v(cid, *args, **kw): case(cid, [V, *args], **kw)
def req(cid, f, exp, **kw): a(cid, "requests", D + f, out="jsonl", lines=exp, **kw)
G = ["--preset", "gpt2"]
EST = lambda f, *x: ["estimate", "--model", D + f, "--seq", "16", "--json", *x]

# helpers for fn checks (d: parsed stdout JSON; ans: parsed request answers; es: stderr)
def ans_equal(i, j):
    def f(rc, out, es, d, ans):
        if len(ans) > max(i, j) and ans[i] != ans[j]: return ["answers %d and %d differ" % (i, j)]
    return f
def ans_msgs_equal(i, j):
    def f(rc, out, es, d, ans):
        if len(ans) > max(i, j):
            mi = ans[i].get("error", {}).get("message"); mj = ans[j].get("error", {}).get("message")
            if mi != mj: return [f"error messages differ: {mi!r} vs {mj!r}"]
    return f
def msg_has(sub, line=None):
    def f(rc, out, es, d, ans):
        if line is None:
            if rc == 2 and sub not in es: return [f"message lacks {sub!r}"]
        elif len(ans) > line and ans[line].get("ok") is False and sub not in ans[line].get("error", {}).get("message", ""):
            return [f"answer {line} message lacks {sub!r}"]
    return f
def model_field(key, want, why):
    def f(rc, out, es, d, ans):
        if rc == 0 and d is not None and d.get("model", {}).get(key) != want:
            return [f"model.{key} is {d.get('model', {}).get(key)!r}, expected {want!r} ({why})"]
    return f
def cfg_field(key, want, line=None):
    def f(rc, out, es, d, ans):
        src = d if line is None else (ans[line] if len(ans) > line else None)
        if src and src.get("ok", True) and src.get("config", {}).get(key) != want:
            return [f"config.{key} is {src.get('config', {}).get(key)!r}, expected {want!r}"]
    return f
def name_is(want):
    def f(rc, out, es, d, ans):
        if rc == 0 and d and d.get("model", {}).get("name") != want: return [f"model name {d.get('model', {}).get('name')!r}, expected {want!r}"]
    return f
def warn_has(sub):
    def f(rc, out, es, d, ans):
        src = d if d is not None else (ans[0] if ans else {})
        if rc == 0 and src and src.get("ok", True) and not any(sub in x for x in src.get("warnings", [])):
            return [f"no warning mentions {sub!r}"]
    return f
def all_of(*fs):
    def f(*x):
        r = []
        for g in fs: r += g(*x) or []
        return r
    return f

# A. model_text ---------------------------------------------------------
GA = "model_text"
req("mt-valid-same-as-model", "mt_valid_vs_model.txt", ["ok", "ok"], fn=ans_equal(0, 1), group=GA)
req("mt-valid-hf-qwen3", "mt_valid_hf_qwen3.txt", ["ok"], group=GA)
for f in ["empty", "ws", "array", "null_text", "null_value", "number_value", "object_value", "truncated",
          "trailing_garbage", "two_objects"]:
    req("mt-" + f.replace("_", "-"), f"mt_{f}.txt", ["err"], group=GA)
req("mt-dup-top-key", "mt_dup_top.txt", ["err"], fn=msg_has("model.hidden_size", 0), group=GA)
req("mt-dup-metadata-name", "mt_dup_meta.txt", ["err"], fn=msg_has("model.metadata.name", 0), group=GA)
req("mt-dup-request-key", "mt_dup_request_key.txt", ["err"], group=GA)
req("mt-nested-model-text", "mt_nested_model_text.txt", ["err"], group=GA)
req("mt-is-a-request", "mt_is_request.txt", ["err"], group=GA)
req("mt-depth-64", "mt_depth64.txt", ["ok"], group=GA)
req("mt-depth-65", "mt_depth65.txt", ["err"], group=GA)
req("mt-values-2p18", "mt_vals_2p18.txt", ["ok"], group=GA)
req("mt-values-2p18p1", "mt_vals_2p18p1.txt", ["err"], group=GA)
req("mt-huge-16mib-string", "mt_huge_string.txt", ["ok"], group=GA)
req("mt-huge-16mib-escapes", "mt_huge_escaped.txt", ["ok"], group=GA)
req("mt-huge-16mib-with-nan", "mt_huge_with_nan.txt", ["ok"], group=GA)
req("mt-nan-in-used-key-vocab", "mt_nan_used.txt", ["err"], fn=msg_has("NaN (not a finite number)", 0), group=GA)
req("mt-nan-in-used-key-hidden", "mt_nan_used2.txt", ["err"], fn=msg_has("model.hidden_size", 0), group=GA)
req("mt-inf-in-hf-kv-heads", "mt_inf_kv_hf.txt", ["err"], fn=msg_has("num_key_value_heads", 0), group=GA)
req("mt-nan-in-unused-hf-keys", "mt_nan_unused_hf.txt", ["ok"], group=GA)
req("mt-inf-unused-same-as-finite", "mt_nan_unused_hf_vs_plain.txt", ["ok", "ok"], fn=ans_equal(0, 1), group=GA)
req("mt-nan-in-metadata-notes", "mt_nan_in_notes.txt", ["*"], group=GA)
req("mt-with-preset", "mt_with_preset.txt", ["err"], group=GA)
req("mt-with-model", "mt_with_model.txt", ["err"], group=GA)
req("mt-with-example", "mt_with_example.txt", ["err"], group=GA)
req("mt-nul-escape", "mt_nul.txt", ["err"], group=GA)
req("mt-bom-first", "mt_bom.txt", ["*"], group=GA)
req("mt-c1-name-estimate-view", "mt_c1_name.txt", ["ok", "ok"], group=GA)
req("mt-c1-hf-key-warning", "mt_c1_hf_key.txt", ["ok"], fn=warn_has("ignored"), group=GA)
req("mt-lone-surrogate", "mt_lone_surrogate.txt", ["err"], group=GA)
req("mt-error-byte-after-nan", "mt_err_byte_nan.txt", ["err", "err"], fn=ans_msgs_equal(0, 1), group=GA)
req("mt-error-byte-after-three-tokens", "mt_err_byte_three.txt", ["err", "err"], fn=ans_msgs_equal(0, 1), group=GA)
req("mt-bare-nan-key", "mt_key_nan_space.txt", ["err"], note="NaN in key position is not a value; the text is not JSON", group=GA)
req("mt-sweep-view-timeline-plan", "mt_sweep_view.txt", ["ok", "ok", "ok", "ok"], group=GA)

# B. NaN / Infinity ---------------------------------------------------------
GB = "nan_tokens"
a("nan-inside-strings", *EST("b_nan_in_strings.json"), expect=OK, out="json", fn=name_is("NaN Infinity -Infinity"), group=GB)
a("nan-after-escaped-quote", *EST("b_nan_escaped_quote.json"), expect=OK, out="json", fn=name_is('a"NaN'), group=GB)
a("nan-key-at-object-start", *EST("b_key_at_start.json"), expect=R, out="json", group=GB)
a("nan-key-after-comma-ours", *EST("b_key_after_comma_ours.json"), expect=R, out="json", group=GB)
a("nan-key-after-comma-hf", *EST("b_key_after_comma_hf.json"), expect=R, out="json",
  note="NaN in key position: not a value, text is not JSON", group=GB)
a("inf-key-in-config", "estimate", *G, "--config", D + "b_cfg_key_inf.json", expect=R, group=GB)
a("nan-after-newline-tab", *EST("b_after_newlines.json"), expect=R, out="json", fn=msg_has("model.vocab_size"), group=GB)
for f, nm in [("b_neg_nan", "-NaN"), ("b_plus_inf", "+Infinity"), ("b_lower_inf", "infinity"), ("b_nanx", "NaNx"),
              ("b_infx", "InfinityX"), ("b_nan_colon", "[NaN:1]"), ("b_lower_nan", "nan")]:
    a("token-" + nm.replace("+", "plus").replace("[", "").replace(":1]", "-colon").lower(), *EST(f + ".json"), expect=R, out="json",
      fn=msg_has("malformed"), group=GB)
a("nan-no-space-before-brace", *EST("b_no_space_close.json"), expect=OK, out="json", group=GB)
a("nan-inf-in-unused-array", *EST("b_in_array_unused.json"), expect=OK, out="json", fn=warn_has("x_unused"), group=GB)
a("nan-whole-file", *EST("b_whole_nan.json"), expect=R, out="json", group=GB)
a("nan-after-bom", *EST("b_bom_nan.json"), expect=R, out="json", group=GB)
a("neginf-config-seq", "estimate", *G, "--config", D + "b_cfg_seq_neginf.json", expect=R, fn=msg_has("-Infinity (not a finite number)"), group=GB)
for k in ["gpu", "dtype", "recompute", "attention", "sp", "offload", "fragmentation_pct", "gpu_memory_bytes",
          "grad_bucket_bytes", "schedule", "master_weights", "gpu_memory"]:
    a(f"token-config-{k}", "estimate", *G, "--config", D + f"b_cfg_{k}.json", expect=R, fn=msg_has("config." + k), group=GB)
a("token-config-layer-split", "estimate", *G, "--config", D + "b_cfg_split_nan.json", expect=R, group=GB)
a("token-config-custom-keep", "estimate", *G, "--config", D + "b_cfg_keep_nan.json", expect=R, group=GB)
a("token-config-error-byte", "estimate", *G, "--config", D + "b_cfg_err_byte_nan.json", expect=R,
  same=[A, "estimate", *G, "--config", D + "b_cfg_err_byte_str.json"], group=GB, note="stderr compared after the file name")
for name in ["kv", "headdim", "ninner", "tie", "quant", "attnimpl", "upcast", "pubparams", "kindffn", "capacity",
             "q2m_experts", "q3m_mlponly", "q3m_step", "q3_qknorm", "p3_resid", "p3_embd"]:
    a(f"token-hf-{name}", *EST(f"b_hf_{name}.json"), expect=R, out="json", group=GB)
for name in ["sliding", "maxwin", "torchdtype"]:
    a(f"token-hf-unused-{name}", *EST(f"b_hf_{name}.json"), expect=OK, out="json", group=GB)
a("nan-2p18-tokens-unused", *EST("b_many_nan_ok.json"), expect=OK, out="json", group=GB)
a("nan-16mib-of-tokens", *EST("b_many_nan_over.json"), expect=R, out="json", group=GB)
req("token-request-keys", "b_req_tokens.txt", ["err"] * 11, group=GB)
a("cli-gpu-memory-Infinity", "estimate", *G, "--gpu-memory", "Infinity", expect=R, group=GB)
a("cli-dropout-NaN", "estimate", *G, "--dropout", "NaN", expect=R, group=GB)
a("cli-seq-Infinity", "estimate", *G, "--seq", "Infinity", expect=R, group=GB)
a("cli-layer-split-NaN", "estimate", *G, "--pp", "2", "--layer-split", "NaN,6", expect=R, group=GB)
a("cli-sweep-seqs-Infinity", "sweep", *G, "--sweep-seqs", "64,Infinity", expect=R, group=GB)

# C. qwen3 / qwen3_moe / phi3 ------------------------------------------------
GC = "new_families"
a("q3-base", *EST("q3.json"), expect=OK, out="json", fn=model_field("qk_norm", True, "qwen3 implies qk_norm"), group=GC)
a("q3-no-head-dim", *EST("q3_no_headdim.json"), out="json", group=GC,
  fn=model_field("head_dim", 128, "transformers Qwen3Config defaults head_dim to 128; refusing would also be honest"))
for tag, e in [("0", R), ("1", OK), ("7", OK), ("2p40", ANY), ("2p40p1", R), ("null", ANY), ("str", R), ("float", OK),
               ("neg", R), ("1e400", R)]:
    a(f"q3-head-dim-{tag}", *EST(f"q3_hd_{tag}.json"), expect=e, out="json", group=GC,
      same=([A, *EST("q3.json")] if tag == "float" else None))
a("q3-qk-norm-false", *EST("q3_qknorm_false.json"), expect=OK, out="json", differs=[A, *EST("q3.json")], group=GC)
a("ours-qk-norm-true", *EST("ours_qknorm_true.json"), expect=OK, out="json", differs=[A, *EST("tiny.json")], group=GC)
a("ours-qk-norm-string", *EST("ours_qknorm_str.json"), expect=R, out="json", group=GC)
a("ours-qk-norm-null", *EST("ours_qknorm_null.json"), out="json", group=GC)
a("kind-qk-norm-true", *EST("stack_kind_qknorm.json"), expect=OK, out="json", differs=[A, *EST("stack_plain.json")], group=GC)
a("kind-qk-norm-string", *EST("stack_kind_qknorm_str.json"), expect=R, out="json", group=GC)
a("gpt2-qk-norm-true", *EST("g2_qknorm.json"), out="json", group=GC)
a("q3m-base", *EST("q3m.json"), expect=OK, out="json", group=GC)
a("q3m-no-num-experts", *EST("q3m_no_experts.json"), expect=R, out="json", group=GC)
a("q3m-no-topk", *EST("q3m_no_topk.json"), expect=R, out="json", group=GC)
a("q3m-no-moe-intermediate", *EST("q3m_no_moe_inter.json"), expect=R, out="json", group=GC,  # round 4: now refused
  note="Qwen3MoeConfig defaults moe_intermediate_size to 768; refusing would be honest",
  fn=lambda rc, out, es, d, ans: (["experts sized at intermediate_size 128 (identical to moe_intermediate_size 128), "
                                   "transformers uses its default 768"]
                                  if rc == 0 and out == run_plain([A, *EST("q3m_moe_inter_128.json")])[1] else []))
a("q2m-no-moe-intermediate", *EST("q2m_no_moe_inter.json"), expect=R, out="json", group=GC,  # round 4: now refused
  note="Qwen2MoeConfig defaults moe_intermediate_size to 1408",
  fn=lambda rc, out, es, d, ans: (["experts sized at intermediate_size 128 (identical to moe_intermediate_size 128), "
                                   "transformers uses its default 1408"]
                                  if rc == 0 and out == run_plain([A, *EST("q2m_moe_inter_128.json")])[1] else []))
for tag, e in [("oob", R), ("neg", R), ("dup", OK), ("all", ANY), ("str", R), ("null", ANY), ("float", OK), ("2p64", R)]:
    a(f"q3m-mlp-only-{tag}", *EST(f"q3m_mlponly_{tag}.json"), expect=e, out="json", group=GC,
      same=([A, *EST("q3m_mlponly_1.json")] if tag == "float" else None))
for tag, e in [("0", R), ("1", OK), ("2", OK), ("2p63", ANY), ("neg", R), ("1p5", R), ("null", ANY)]:
    a(f"q3m-sparse-step-{tag}", *EST(f"q3m_step_{tag}.json"), expect=e, out="json", group=GC,
      differs=([A, *EST("q3m.json")] if tag == "2" else None), same=([A, *EST("q3m.json")] if tag == "1" else None))
a("q3m-two-counts-equal", *EST("q3m_counts_equal.json"), expect=OK, out="json", group=GC)
a("q3m-two-counts-4-and-4.0", *EST("q3m_counts_int_float.json"), expect=OK, out="json", group=GC)
a("q3m-two-counts-differ", *EST("q3m_counts_differ.json"), expect=R, out="json", group=GC)
a("q3m-layer-stack-and-step", *EST("q3m_stack_and_step.json"), expect=R, out="json", group=GC)
a("q3m-no-intermediate-mlp-only0", *EST("q3m_no_inter_mlponly0.json"), out="json", group=GC)
a("p3-base", *EST("p3.json"), expect=OK, out="json", group=GC)
a("p3-embd-ne-resid", *EST("p3_embd_ne_resid.json"), expect=R, out="json", group=GC)
a("p3-embd-eq-resid", *EST("p3_embd_eq_resid.json"), expect=OK, out="json", group=GC)
a("p3-hidden-dropout-conflict", *EST("p3_hidden_conflict.json"), expect=R, out="json", group=GC,
  note="resid_pdrop 0.1 and embd_pdrop 0.1 vs hidden_dropout 0.0: two names for one rate")
a("p3-hidden-dropout-equal", *EST("p3_hidden_equal.json"), expect=OK, out="json", group=GC)
a("p3-resid-only", *EST("p3_resid_only.json"), expect=R, out="json", group=GC,  # round 4: embd_pdrop default 0.0 conflicts
  note="Phi3Config's embd_pdrop defaults to 0.0, not to resid_pdrop",
  fn=lambda rc, out, es, d, ans: (["embedding dropout modelled at resid_pdrop 0.1 (answer identical to embd_pdrop 0.1); "
                                   "Phi3Config's embd_pdrop default is 0.0"]
                                  if rc == 0 and out == run_plain([A, *EST("p3_embd_eq_resid.json")])[1] else []))
a("p3-attn-pdrop", *EST("p3_attn_pdrop.json"), expect=R, out="json", group=GC)
a("p3-hidden-only", *EST("p3_hidden_only.json"), out="json", group=GC)
a("p3-n-embd", *EST("p3_n_embd.json"), expect=R, out="json", group=GC)
a("p3-partial-rotary-warned", *EST("p3_partial_rotary.json"), out="json", fn=warn_has("partial_rotary_factor"), group=GC)
a("g2-hidden-dropout-conflict", *EST("g2_hidden_conflict.json"), expect=R, out="json", group=GC,
  note="resid_pdrop 0.1 vs hidden_dropout 0.0 on gpt2")
a("p3-config-dropout-overrides", "estimate", "--model", D + "p3_embd_eq_resid.json", "--seq", "16", "--dropout", "0.2", "--json",
  expect=OK, out="json", fn=cfg_field("hidden_dropout", 0.2), group=GC)
for p in ["qwen3-8b", "qwen3-30b-a3b", "phi-3-mini-4k"]:
    a(f"preset-{p}-timeline-json", "timeline", "--preset", p, "--seq", "4096", "--json", expect=OK, out="json", group=GC)

# D. C1 / DEL --------------------------------------------------------------
GD = "c1_del"
a("c1-kind-estimate-table", "estimate", "--model", KC1, "--seq", "16", expect=OK, group=GD)
a("c1-kind-estimate-json", "estimate", "--model", KC1, "--seq", "16", "--json", expect=OK, out="json", group=GD)
a("c1-kind-explain", "explain", "--model", KC1, "--seq", "16", "--gpu", "rtx-4090", expect=OK, group=GD)
a("c1-kind-timeline-table", "timeline", "--model", KC1, "--seq", "16", "--gpu", "rtx-4090", expect=OK, group=GD)
a("c1-kind-timeline-csv", "timeline", "--model", KC1, "--seq", "16", "--csv", expect=OK, group=GD)
a("c1-kind-fit-table", "fit", "--model", KC1, "--seq", "16", "--gpu-memory", "1GiB", expect=OK, group=GD)
a("c1-kind-plan-table", "plan", "--model", KC1, "--seq", "16", "--gpu-memory", "40MiB", expect=OK, group=GD)
a("c1-kind-plan-json", "plan", "--model", KC1, "--seq", "16", "--gpu-memory", "40MiB", "--json", expect=OK, out="json", group=GD)
a("c1-kind-sweep-table", "sweep", "--model", KC1, "--gpu-memory", "40MiB", "--sweep-seqs", "16,64", expect=OK, group=GD)
a("c1-kind-sweep-json", "sweep", "--model", KC1, "--sweep-seqs", "16,64", "--json", expect=OK, out="json", group=GD)
a("c1-hf-key-table", "estimate", "--model", HFC1, "--seq", "16", expect=OK, group=GD)
a("c1-hf-key-explain", "explain", "--model", HFC1, "--seq", "16", expect=OK, group=GD)
a("c1-phi3-key-json", "estimate", "--model", P3C1, "--seq", "16", "--json", expect=OK, out="json", fn=warn_has("ignored"), group=GD)
a("c1-custom-keep-id", "estimate", *G, "--recompute", "custom", "--custom-keep", "attn.q\u009b\u007f", expect=R, group=GD)
a("c1-gpu-flag-json", "estimate", *G, "--gpu", "h100\u007f\u0085", "--json", expect=R, out="json", group=GD)
a("c1-dup-key-config", "estimate", *G, "--config", D + "cfg_dup_c1_key.json", expect=R, group=GD)
a("c1-kind-bad-field", *EST("kind_c1_bad_field.json"), expect=R, out="json", group=GD)
a("c1-model-type", *EST("hf_type_c1.json"), expect=R, out="json", group=GD)
a("c1-hidden-act", *EST("hf_act_c1.json"), expect=R, out="json", group=GD)
a("c1-config-path", "estimate", *G, "--config", "/nonexistent/\u009b\u007f.json", expect=R, group=GD)
a("c1-flag-name", "estimate", *G, "--s\u0085eq\u007f", "5", expect=R, group=GD)
req("c1-requests-stream", "req_c1.txt", ["ok", "ok", "err", "err", "err", "err", "err", "ok"], group=GD)

# E. conflict / refusal edges ---------------------------------------------------
GE = "edges"
a("edge-dropout-eq-attn-flags", "estimate", *G, "--dropout", "0.1", "--attention-dropout", "0.1", "--json", expect=OK, out="json", group=GE)
a("edge-dropout-eq-both-flags", "estimate", *G, "--dropout", "0.1", "--hidden-dropout", "0.1", "--attention-dropout", "0.1", expect=OK, group=GE)
a("edge-dropout-same-double", "estimate", *G, "--dropout", "0.1", "--attention-dropout", "0.10000000000000001", expect=OK, group=GE)
a("edge-dropout-0-vs-neg0", "estimate", *G, "--dropout", "0", "--attention-dropout", "-0.0", group=GE)
a("edge-dropout-eq-one-file", "estimate", *G, "--config", D + "e_drop01_attn01.json", expect=OK, group=GE)
a("edge-dropout-file-attn-flag-eq", "estimate", *G, "--config", D + "e_drop01.json", "--attention-dropout", "0.1", expect=OK, group=GE)
a("edge-dropout-file-attn-flag-ne", "estimate", *G, "--config", D + "e_drop01.json", "--attention-dropout", "0.2", "--json", out="json",
  fn=cfg_field("attention_dropout", 0.2), group=GE, note="a flag overrides the files; if accepted the flag's rate must be used")
a("edge-dropout-two-files-eq", "estimate", *G, "--config", D + "e_drop01.json", "--config", D + "e_attn01.json", expect=OK, group=GE)
a("edge-dropout-one-file-ne", "estimate", *G, "--config", D + "e_drop01_attn02.json", expect=R, group=GE)
a("edge-mixtral-counts-equal", *EST("mix_counts_eq.json"), expect=OK, out="json", group=GE)
a("edge-mixtral-counts-4-and-4.0", *EST("mix_counts_int_float.json"), expect=OK, out="json", group=GE)
a("edge-mixtral-counts-4-and-str", *EST("mix_counts_str.json"), expect=R, out="json", group=GE)
a("edge-dense-topk-null", *EST("dense_topk_null.json"), expect=OK, out="json", group=GE)
a("edge-dense-topk-0", *EST("dense_topk_0.json"), expect=R, out="json", group=GE)
a("edge-dense-moe-keys-null", *EST("dense_moeinter_null.json"), expect=OK, out="json", group=GE)
a("edge-quant-null", *EST("hf_quant_null.json"), expect=OK, out="json", group=GE)
a("edge-quant-empty-object", *EST("hf_quant_empty.json"), out="json", group=GE)
a("edge-attn-impl-null", *EST("hf_attnimpl_null.json"), expect=OK, out="json", group=GE)
a("edge-attn-impl-eager", *EST("hf_attnimpl_eager.json"), out="json", group=GE)
a("edge-gpt2-upcast-scale-false", *EST("g2_upcast_false.json"), expect=OK, out="json", group=GE)
a("edge-gpt2-scale-true", *EST("g2_scale_true.json"), expect=R, out="json", group=GE)
a("edge-llama-scale-true", *EST("hfl_scale_true.json"), expect=R, out="json", group=GE)
a("edge-gpt2-upcast-null", *EST("g2_upcast_null.json"), out="json", group=GE)
req("edge-request-gpu-and-dropout", "e_req_edges.txt", ["err", "err", "err", "ok"], group=GE)
req("edge-sweep-config-micro-batch-1", "e_req_sweep_mb1.txt", ["err"], group=GE)
req("edge-sweep-config-seq-equal-to-grid", "e_req_sweep_seq_eq.txt", ["err"], group=GE)
req("edge-sweep-example-seq", "e_req_sweep_example.txt", ["*", "ok"], group=GE,
  note="an example's config holds seq 4096 and micro_batch 1; a request's config.seq is refused on sweep",
  fn=lambda rc, out, es, d, ans: (["example's seq/micro_batch silently dropped by sweep (answer identical to the preset without them)"]
                                  if len(ans) == 2 and ans[0].get("ok") and
                                  {k: v for k, v in ans[0].items() if k != "config"} == {k: v for k, v in ans[1].items() if k != "config"} else []))
req("edge-plan-example-recompute", "e_req_plan_example_rc.txt", ["*", "ok"], group=GE,
  note="the example's config holds recompute full; a request's config.recompute is refused on plan",
  fn=lambda rc, out, es, d, ans: (["example's recompute silently dropped by plan (answer identical to the example without it)"]
                                  if len(ans) == 2 and ans[0].get("ok") and ans[0] == ans[1] else []))
req("edge-example-plus-dropout", "e_req_example_dropout.txt", ["*"], group=GE,
  fn=all_of(cfg_field("attention_dropout", 0.05, 0), cfg_field("hidden_dropout", 0.05, 0)))
req("edge-example-plus-attn-dropout", "e_req_example_attn.txt", ["*"], group=GE, fn=cfg_field("attention_dropout", 0.1, 0))
req("edge-plan-recompute-none-offload-false-keep-empty", "e_req_plan_edges.txt", ["err", "*", "*"], group=GE)
a("edge-micro-batches-0", "estimate", *G, "--micro-batches", "0", expect=R, group=GE)
a("ops-405b-524288-timeline-json", "timeline", "--preset", "llama-3.1-405b", "--micro-batches", "524288", "--json", expect=OK, out="json", group=GE)
a("ops-405b-524289-timeline", "timeline", "--preset", "llama-3.1-405b", "--micro-batches", "524289", expect=R, group=GE)
a("ops-1024L-pp512-mb1024-json", "timeline", "--model", L1024, "--seq", "16", "--pp", "512", "--micro-batches", "1024", "--json", expect=OK, out="json", group=GE)
a("ops-1024L-pp64-vpp8-mb1024-json", "timeline", "--model", L1024, "--seq", "16", "--pp", "64", "--vpp", "8", "--micro-batches", "1024", "--json", expect=OK, out="json", group=GE)
a("ops-1024L-pp64-vpp8-mb1024-plus", "timeline", "--model", L1024, "--seq", "16", "--pp", "64", "--vpp", "8", "--micro-batches", "1088", expect=R, group=GE)
a("ops-405b-524288-fit", "fit", "--preset", "llama-3.1-405b", "--micro-batches", "524288", "--gpu", "b200", "--json", expect=OK, out="json", group=GE)
a("ops-405b-524288-plan", "plan", "--preset", "llama-3.1-405b", "--micro-batches", "524288", "--gpu", "b200", "--json", expect=ANY, out="json", group=GE, note="plan has its own documented bound (layers x ops <= 4,194,304)")
a("ops-405b-524288-sweep16x16", "sweep", "--preset", "llama-3.1-405b", "--micro-batches", "524288",
  "--sweep-seqs", ",".join(str(1024 * i) for i in range(1, 17)), "--sweep-micro-batches", ",".join(str(i) for i in range(1, 17)),
  "--json", expect=OK, out="json", group=GE)
req("ops-requests-view-allops-bound", "e_req_ops_bound.txt", ["ok", "ok", "err"], group=GE)
a("ops-plan-1024L-pp1-bound", "plan", "--model", L1024, "--seq", "16", "--micro-batches", "512", "--gpu-memory", "1GiB", "--json", out="json", group=GE)

# F. validator ------------------------------------------------------------
GF = "validator"
v("v-work-just-under-1e9", "--model", D + "v_work_under.json", "--seq", "192", "--micro-batch", "4", "--json", out="json", group=GF,
  note="9.81e8 multiply-adds per step, 99.5 MiB predicted: inside both CPU bounds",
  fn=None)  # round 4: work measure changed (projections, scores, logits counted; fd bound 1.5e10); expectation 'any' 
v("v-work-just-under-1e9-no-fd-no-ref", "--model", D + "v_work_under.json", "--seq", "192", "--micro-batch", "4", "--fd-probes", "0",
  "--reference", "off", "--json", out="json", group=GF, note="the same run without finite differences or the fp64 reference")
v("v-work-just-over-1e9", "--model", D + "v_work_under.json", "--seq", "208", "--micro-batch", "4", expect=R, group=GF)
v("v-fd-851-at-bound", "--model", D + "v_mid.json", "--seq", "64", "--fd-probes", "851", "--json", expect=R, out="json", group=GF,  # round 4: fd bound now 1.5e10 / (4*forward)
  note="explicit count at the work bound (2.5e10 / 29,360,128 = 851)")
v("v-fd-852-over-bound", "--model", D + "v_mid.json", "--seq", "64", "--fd-probes", "852", expect=R, fn=msg_has("fd"), group=GF)  # round 4: bound number changed
v("v-vocab-dominated-98.7MiB", "--model", D + "v_vocab.json", "--seq", "128", "--json", out="json", group=GF,
  note="step work counts no LM head: 2.6e6 counted, 3.3e8 per forward in the LM head; 98.7 MiB predicted")
v("v-vocab-just-over-100MiB", "--model", D + "v_vocab_over.json", "--seq", "128", expect=R, group=GF)
v("v-explicit-head-dim-2048", "--model", D + "v_headdim.json", "--seq", "64", "--json", out="json", group=GF,
  note="step work counts projections as h*h; with a*d = 16384 they are 4*h*a*d; 56.7 MiB predicted")
v("v-qwen3-tiny", "--model", D + "v_q3.json", "--seq", "16", "--json", out="json", group=GF)
v("v-phi3-tiny", "--model", D + "v_p3.json", "--seq", "16", "--json", out="json", group=GF)
v("v-ours-qk-norm-tiny", "--model", D + "v_ours_qknorm.json", "--seq", "16", group=GF)
v("v-qwen3-moe-tiny", "--model", D + "v_q3m.json", "--seq", "16", expect=R, group=GF)
v("v-model-nan-vocab", "--model", D + "v_nan.json", "--seq", "16", expect=R, fn=msg_has("NaN"), group=GF)
v("v-model-c1-name-json", "--model", D + "v_c1.json", "--seq", "16", "--json", out="json", group=GF)
v("v-model-c1-name-table", "--model", D + "v_c1.json", "--seq", "16", group=GF)
v("v-gpu-empty", "--gpu", "", "--model", D + "v_c1.json", "--seq", "16", expect=R, group=GF)
v("v-budget-flag", "--budget", "1GiB", "--model", D + "v_c1.json", "--seq", "16", expect=R, group=GF)
v("v-config-gpu-memory-bytes", "--config", D + "b_cfg_gpu_memory_bytes.json", "--model", D + "v_c1.json", "--seq", "16", expect=R, group=GF)
v("v-dropout-conflict", "--dropout", "0.1", "--attention-dropout", "0", "--model", D + "v_c1.json", "--seq", "16", expect=R, group=GF)

CASES[:] = [c for c in CASES if c]

# ------------------------------------------------------------------ checks
CTRL_OUT = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
CTRL_ERR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]")
_base_cache = {}
def run_plain(argv):
    k = tuple(argv)
    if k not in _base_cache:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
        _base_cache[k] = (p.returncode, p.stdout, p.stderr)
    return _base_cache[k]

def jload(out):
    try: return json.loads(out)
    except Exception: return None

def check(c, rc, wall, rss, out, err, texts):
    fails = []
    exe = c["argv"][0]
    okcodes = {0, 2} if exe == A else {0, 1, 2, 77}
    if rc not in okcodes: fails.append(f"exit code {rc}")
    if rc < 0 or rc >= 128: fails.append("crash/signal/timeout")
    if wall > c["limit_s"]: fails.append(f"wall {wall:.2f}s > {c['limit_s']}s")
    if rss > 500 * 1024: fails.append(f"peak RSS {rss/1024:.0f} MB > 500 MB")
    es = err.decode("utf-8", "replace")
    ls = [l for l in es.split("\n") if l != ""]
    prefix = "actmem: error: " if exe == A else "actmem-validate: error: "
    if rc == 2:
        if len(ls) != 1: fails.append(f"exit 2 with {len(ls)} stderr lines")
        elif not ls[0].startswith(prefix): fails.append("stderr line lacks the error prefix")
    elif rc == 0 and err: fails.append("exit 0 with stderr text")
    if CTRL_ERR.search(es): fails.append("stderr has a raw control/C1/DEL char")
    try: err.decode("utf-8")
    except UnicodeDecodeError: fails.append("stderr has invalid UTF-8")
    uvals = [x for x in c["argv"][1:] if len(x) > 80] + [t for t in texts if len(t) > 80]
    if uvals and len(es) > 80:
        for i in range(0, min(len(es), 4000) - 80):
            win = es[i:i + 81]
            if any(win in u for u in uvals):
                fails.append("stderr echoes >80 chars of a user value"); break
    if CTRL_OUT.search(out): fails.append("stdout has a raw control/C1/DEL char")
    try: out.decode("utf-8")
    except UnicodeDecodeError: fails.append("stdout has invalid UTF-8")
    if c["expect"] == R and rc == 0: fails.append("exit 0 where rejection expected")
    if c["expect"] == OK and rc != 0: fails.append("rejected where acceptance expected")
    d = None; ans = []
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
            ans.append(j)
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
        brc, bout, _ = run_plain(c["differs"])
        if brc == 0 and bout == out: fails.append("answer identical to the baseline without the setting (silently ignored)")
    if c["same"]:
        brc, bout, berr = run_plain(c["same"])
        if rc == 0 and bout != out: fails.append("answer differs from the equivalent input")
        if rc == 2 and brc == 2:
            n1 = re.sub(r"\S*\.json", "F", es); n2 = re.sub(r"\S*\.json", "F", berr.decode("utf-8", "replace"))
            if n1 != n2: fails.append(f"error differs from the equivalent input: {n1.strip()!r} vs {n2.strip()!r}")
    if c["fn"]:
        try: fails += c["fn"](rc, out, es, d, ans) or []
        except Exception as e: fails.append(f"check raised {e!r}")
    return fails

def main():
    only = set(sys.argv[1:])
    res = open(OUT + (".partial" if only else ""), "w")
    nfail = 0; n = 0
    for c in CASES:
        if only and c["id"] not in only: continue
        n += 1
        tf = "/tmp/hostile6/time3.out"
        stdin = open(c["stdin"], "rb") if c["stdin"] else subprocess.DEVNULL
        t0 = time.time()
        p = subprocess.Popen(["/usr/bin/time", "-o", tf, "-f", "%e %M", *c["argv"]], stdin=stdin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=c["tmo"])
            rc = p.returncode
            timed_out = False
        except subprocess.TimeoutExpired:
            import signal
            os.killpg(p.pid, signal.SIGKILL)   # the whole group: time and the tool under it
            out, err = p.communicate()
            rc = -999; timed_out = True
        wall_py = time.time() - t0
        wall, rss = wall_py, 0
        if not timed_out:
            try:
                tl = open(tf).read().strip().splitlines()
                last = tl[-1].split(); wall, rss = float(last[0]), int(last[1])
                if any("terminated by signal" in l for l in tl[:-1]): rc = 128 + int(tl[0].split()[-1])
            except Exception:
                pass
        texts = []
        for x in c["argv"][1:]:
            x = x.split("=", 1)[1] if x.startswith("--") and "=" in x else x
            if x.startswith(D) and os.path.isfile(x) and os.path.getsize(x) < (1 << 21):
                texts.append(open(x, "rb").read().decode("utf-8", "replace"))
        fails = check(c, rc, wall, rss, out, err, texts)
        if timed_out: fails.insert(0, f"killed after {c['tmo']} s (still running)")
        rec = dict(id=c["id"], step="2-new", group=c["group"], cmd=shlex.join(c["argv"])[:600], cmd_len=len(shlex.join(c["argv"])),
                   exit=rc, wall_s=wall, peak_rss_kb=rss, stdout_bytes=len(out), stdout_head=out[:400].decode("utf-8", "backslashreplace"),
                   stderr=err.decode("utf-8", "backslashreplace")[:1000], expect=c["expect"], lines_expected=c["lines"],
                   note=c["note"], fails=fails)
        res.write(json.dumps(rec) + "\n"); res.flush()
        if fails: nfail += 1
        print(f"{'FAIL' if fails else 'ok  '} {c['id']:46s} rc={rc:<4} {wall:6.2f}s {rss//1024:5d}MB out={len(out):<9} {'; '.join(fails)} | {err.decode('utf-8','backslashreplace')[:150].strip()}", flush=True)
    print(f"TOTAL {n} cases, {nfail} with failures")
if __name__ == "__main__":
    main()
