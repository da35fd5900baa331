#!/usr/bin/env python3
"""Hostile-input runner for actmem / actmem-validate. Records, per input: command, exit code,
wall time, peak RSS (/usr/bin/time -f '%e %M'), stdout size, stderr text; flags failures."""
import json, os, re, shlex, subprocess, sys, time, signal
A = "/tmp/hostile6/bin/actmem"; V = "/tmp/hostile6/bin/actmem-validate"
F = "/tmp/hostile6/files/"
OUT = "/tmp/hostile6/step1/results_step1.jsonl"
import os as _os; _os.makedirs("/tmp/hostile6/step1", exist_ok=True)
CASES = []
def case(cid, argv, expect="any", out=None, stdin=None, fifo=None, note="", limit_s=2.0, pre=None, lines=None):
    if argv[0] == V: limit_s = max(limit_s, 120.0)   # round 3: the validator's legitimate runs get 60 s
    CASES.append(dict(id=cid, argv=argv, expect=expect, out=out, stdin=stdin, fifo=fifo, note=note,
                      limit_s=limit_s, pre=pre, lines=lines))
def a(cid, *args, **kw): case(cid, [A, *args], **kw)
def v(cid, *args, **kw): case(cid, [V, *args], **kw)
R, OK = "reject", "accept"
G = ["--preset", "gpt2"]; L8 = ["--preset", "llama-3.1-8b"]; L405 = ["--preset", "llama-3.1-405b"]
ESC = "\x1b[2J\x1b[31m"
# ---------------- CLI flags ----------------
a("no-args", expect=R)
a("empty-command", "", expect=R)
a("dash-h-first", "-h")
a("single-dash", "estimate", *G, "-", expect=R)
a("triple-dash", "estimate", *G, "---seq", "5", expect=R)
a("single-dash-flag", "estimate", *G, "-seq", "512", expect=R)
a("positional-extra", "estimate", *G, "extra", expect=R)
a("case-flag", "estimate", *G, "--Seq", "512", expect=R)
a("unicode-flag", "estimate", *G, "--s\u00e9q", "512", expect=R)
a("flag-with-escape", "estimate", *G, "--seq" + ESC, "512", expect=R)
a("long-flag-100k", "estimate", *G, "--" + "x" * 100000, expect=R)
a("seq-missing-at-end", "estimate", *G, "--seq", expect=R)
a("seq-empty", "estimate", *G, "--seq", "", expect=R)
a("seq-inline-empty", "estimate", *G, "--seq=", expect=R)
a("seq-inline-double-eq", "estimate", *G, "--seq==512", expect=R)
a("seq-hex-0X", "estimate", *G, "--seq", "0X200", expect=R)
a("seq-octal-like", "estimate", *G, "--seq", "0512", expect=R)
a("seq-1e3", "estimate", *G, "--seq", "1e3", "--json", out="json")
a("seq-512.0", "estimate", *G, "--seq", "512.0", "--json", out="json")
a("seq-leading-space", "estimate", *G, "--seq", " 512", "--json", out="json")
a("seq-plus", "estimate", *G, "--seq", "+512", expect=R)
a("seq-arabic-digits", "estimate", *G, "--seq", "\u0665\u0661\u0662", expect=R)
a("seq-fullwidth-digits", "estimate", *G, "--seq", "\uff15\uff11\uff12", expect=R)
a("seq-2p63", "estimate", *L8, "--seq", "9223372036854775808", expect=R)
a("seq-2p64m1", "estimate", *L8, "--seq", "18446744073709551615", expect=R)
a("seq-2p64", "estimate", *L8, "--seq", "18446744073709551616", expect=R)
a("seq-neg-zero", "estimate", *G, "--seq", "-0", expect=R)
a("seq-inf-word", "estimate", *G, "--seq", "inf", expect=R)
a("seq-1e-5", "estimate", *G, "--seq", "1e-5", expect=R)
a("seq-ctrl-value", "estimate", *G, "--seq", "5\n12\x1b[0m", expect=R)
a("seq-long-value", "estimate", *G, "--seq", "9" * 5000, expect=R)
a("seq-long-str-value", "estimate", *G, "--seq", "a" * 100000, expect=R)
a("mb-2p64m1", "estimate", *L8, "--micro-batch", "18446744073709551615", expect=R)
a("mb-int64max-seq1", "estimate", *L8, "--micro-batch", "9223372036854775807", "--seq", "1", expect=R)
a("mb-2p40-seq8-flash", "estimate", *L8, "--micro-batch", "1099511627776", "--seq", "8", "--attention", "flash")
a("tp-2p64m1", "estimate", *L8, "--tp", "18446744073709551615", expect=R)
a("cp-2p64m1", "estimate", *L8, "--cp", "18446744073709551615", expect=R)
a("dp-2p64m1-zero3", "estimate", *L8, "--dp", "18446744073709551615", "--zero", "3", "--json", out="json", note="dp*tp*... gpus overflow?")
a("dp-2p64m1-tp8pp4", "estimate", *L8, "--dp", "18446744073709551615", "--tp", "8", "--pp", "4", "--zero", "1", "--json", out="json")
a("ep-2p64m1", "estimate", "--preset", "mixtral-8x7b", "--ep", "18446744073709551615", expect=R)
a("ep-on-dense", "estimate", *L8, "--ep", "2", expect=R)
a("pp-2p32p1", "estimate", *L8, "--pp", "4294967297", expect=R)
a("pp-equals-layers-plus-one", "estimate", *L8, "--pp", "33", expect=R)
a("vpp-zero", "estimate", *L8, "--vpp", "0", expect=R)
a("vpp-without-pp", "estimate", *L8, "--vpp", "2", expect=R)
a("zero-neg", "estimate", *G, "--zero", "-1", expect=R)
a("zero-1.5", "estimate", *G, "--zero", "1.5", expect=R)
a("zero-3.0", "estimate", *G, "--zero", "3.0", "--json", out="json")
a("zero-without-dp", "estimate", *G, "--zero", "3", "--json", out="json")
a("grad-accum-over-max", "estimate", *G, "--grad-accum", "4194305", expect=R)
a("grad-accum-ops-over", "timeline", *G, "--grad-accum", "1048577", expect=R)
a("grad-accum-vs-micro-batches", "estimate", *G, "--grad-accum", "4", "--micro-batches", "8", expect=R)
a("grad-accum-and-mbs-same", "estimate", *G, "--grad-accum", "4", "--micro-batches", "4")
a("dropout-nan-word", "estimate", *G, "--dropout", "nan", expect=R)
a("dropout-1e-400", "estimate", *G, "--dropout", "1e-400", "--json", out="json")
a("dropout-round-to-1", "estimate", *G, "--dropout", "0.99999999999999999", expect=R)
a("dropout-1e400", "estimate", *G, "--dropout", "1e400", expect=R)
a("dropout-vs-attn-dropout", "estimate", *G, "--dropout", "0.5", "--attention-dropout", "0.1", note="two flags for one rate")
a("dropout-twice-same-numeric-diff-text", "estimate", *G, "--dropout", "0.5", "--dropout", "0.50")
a("frag-100", "estimate", *G, "--fragmentation", "100", "--json", out="json")
a("frag-100-plus", "estimate", *G, "--fragmentation", "100.0000000001", expect=R)
a("frag-neg-zero", "estimate", *G, "--fragmentation", "-0.0")
a("frag-1e308", "estimate", *G, "--fragmentation", "1e308", expect=R)
a("frag-pct-sign", "estimate", *G, "--fragmentation", "5%", expect=R)
a("gpumem-0", "estimate", *G, "--gpu-memory", "0", expect=R, note="a zero budget")
a("gpumem-0GiB", "estimate", *G, "--gpu-memory", "0GiB", expect=R)
a("gpumem-1B", "estimate", *G, "--gpu-memory", "1B", "--json", out="json")
a("gpumem-2p63", "estimate", *G, "--gpu-memory", "9223372036854775808", expect=R)
a("gpumem-EiB", "estimate", *G, "--gpu-memory", "8EiB", expect=R)
a("gpumem-huge-TiB", "estimate", *G, "--gpu-memory", "99999999999TiB", expect=R)
a("gpumem-space", "estimate", *G, "--gpu-memory", "80 GiB", "--json", out="json")
a("gpumem-lowercase", "estimate", *G, "--gpu-memory", "80gib")
a("gpumem-tiny-frac", "estimate", *G, "--gpu-memory", "0.0000000001GiB", expect=R)
a("gpumem-exp", "estimate", *G, "--gpu-memory", "1e3GiB", expect=R)
a("gpumem-empty", "estimate", *G, "--gpu-memory", "", expect=R)
a("gpumem-long-digits", "estimate", *G, "--gpu-memory", "1." + "9" * 10000 + "GiB")
a("gpumem-twice", "estimate", *G, "--gpu-memory", "80GiB", "--gpu-memory", "1GiB", expect=R, note="flag given twice with two values")
a("gpumem-and-budget", "estimate", *G, "--gpu-memory", "80GiB", "--budget", "1GiB", expect=R, note="two spellings of one setting")
a("gpu-and-gpumem", "estimate", *G, "--gpu", "h100-80gb", "--gpu-memory", "40GiB", "--json", out="json")
a("gpu-upper", "estimate", *G, "--gpu", "H100-80GB", expect=R)
a("gpu-escape", "estimate", *G, "--gpu", ESC + "h100\nFITS", expect=R)
a("gpu-path-traversal", "estimate", *G, "--gpu", "../models/gpt2", expect=R)
a("dtype-upper", "estimate", *G, "--dtype", "BF16", expect=R)
a("dtype-newline", "estimate", *G, "--dtype", "bf16\n", expect=R)
a("dtype-all-fp8", "estimate", *G, "--dtype", "fp8", "--param-dtype", "fp8", "--grad-dtype", "fp8", "--optimizer", "adam8bit")
a("recompute-every-huge", "estimate", *G, "--recompute", "every:99999999999999999999", expect=R)
a("recompute-every-neg", "estimate", *G, "--recompute", "every:-1", expect=R)
a("recompute-every-frac", "estimate", *G, "--recompute", "every:1.5", expect=R)
a("recompute-every-empty", "estimate", *G, "--recompute", "every:", expect=R)
a("recompute-every-13", "estimate", *G, "--recompute", "every:13", note="K larger than the layers")
a("recompute-every-plus", "estimate", *G, "--recompute", "every:+2", expect=R)
a("recompute-every-space", "estimate", *G, "--recompute", "every: 2", expect=R)
a("recompute-layers-empty", "estimate", *G, "--recompute", "layers:", expect=R)
a("recompute-layers-long", "estimate", *G, "--recompute", "layers:" + "K" * 100000, expect=R)
a("recompute-layers-lower", "estimate", *G, "--recompute", "layers:kscr", expect=R)
a("recompute-custom-nokeep", "estimate", *G, "--recompute", "custom")
a("custom-keep-without-custom", "estimate", *G, "--custom-keep", "qkv,mlp_in", expect=R, note="custom_keep ignored unless recompute custom?")
a("custom-keep-unknown-id", "estimate", *G, "--recompute", "custom", "--custom-keep", "nope" + ESC, expect=R)
a("custom-keep-257", "estimate", *G, "--recompute", "custom", "--custom-keep", ",".join("x%d" % i for i in range(257)), expect=R)
a("custom-keep-empty", "estimate", *G, "--recompute", "custom", "--custom-keep", "", expect=R)
a("layer-split-pp1", "estimate", *G, "--layer-split", "12")
a("layer-split-no-pp", "estimate", *G, "--layer-split", "6,6", expect=R)
a("layer-split-zero-stage", "estimate", *G, "--pp", "2", "--layer-split", "0,12", expect=R)
a("layer-split-commas", "estimate", *G, "--pp", "2", "--layer-split", ",", expect=R)
a("layer-split-twice", "estimate", *G, "--pp", "2", "--layer-split", "6,6", "--layer-split", "4,8", expect=R, note="flag given twice")
a("layer-split-4097", "estimate", *G, "--layer-split", ",".join(["0"] * 4097), expect=R)
a("layer-split-neg", "estimate", *G, "--pp", "2", "--layer-split", "13,-1", expect=R)
a("layer-split-with-vpp", "estimate", *L8, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "20,12")
a("sp-without-tp", "estimate", *G, "--sp", "--json", out="json")
a("sp-seq-not-div", "estimate", *L8, "--sp", "--tp", "8", "--seq", "1001", expect=R)
a("offload-full", "estimate", *G, "--offload", "--recompute", "full")
a("json-twice", "estimate", *G, "--json", "--json", out="json")
a("csv-on-estimate", "estimate", *G, "--csv", note="--csv outside timeline: silently ignored?")
a("sweep-flag-on-estimate", "estimate", *G, "--sweep-seqs", "64", expect=R, note="--sweep-seqs outside sweep")
a("sweep-mb-flag-on-fit", "fit", *G, "--gpu", "h100-80gb", "--sweep-micro-batches", "1,2", expect=R)
a("csv-json-timeline", "timeline", *G, "--csv", "--json", out="json")
a("help-with-bad", "estimate", "--help", "--seq", "abc")
a("help-command-extra", "help", "--frobnicate")
a("preset-twice-same", "estimate", *G, *G, expect=R)
a("preset-empty", "estimate", "--preset", "", expect=R)
a("preset-escape", "estimate", "--preset", ESC + "gpt2\r\nFITS", expect=R)
a("preset-long", "estimate", "--preset", "p" * 120000, expect=R)
a("preset-invalid-utf8-json", "estimate", "--preset", "gpt\udcff2", "--json", out="json", expect=R)
a("preset-path", "estimate", "--preset", "../gpus/h100-80gb", expect=R)
a("preset-is-example", "estimate", "--preset", "seed000-flash-7b", expect=R)
a("attention-sdpa", "estimate", *G, "--attention", "sdpa_math")
a("profile-hf", "estimate", *G, "--profile", "hf", "--recompute", "selective")
a("schedule-interleaved-vpp1", "estimate", *L8, "--pp", "4", "--schedule", "interleaved")
a("schedule-gpipe-vpp2", "estimate", *L8, "--pp", "4", "--vpp", "2", "--micro-batches", "8", "--schedule", "gpipe", note="gpipe with vpp>1")
a("mbs-not-multiple-vpp", "estimate", *L8, "--pp", "4", "--vpp", "2", "--micro-batches", "6", expect=R)
# --- model files ---
for fid, exp in [("empty.json", R), ("ws.json", R), ("bom.json", "any"), ("null.json", R), ("string.json", R),
                 ("number.json", R), ("emptyobj.json", R), ("emptyarr.json", R), ("dupkey_hidden.json", R),
                 ("dupkey_layers.json", R), ("invalid_utf8_name.json", "any"), ("invalid_utf8_key.json", R),
                 ("nul_in_json.json", R), ("nul_in_string.json", "any"), ("raw_ctrl_in_string.json", R),
                 ("deep64.json", "any"), ("deep65.json", R), ("deep_in_string.json", "any"),
                 ("unbalanced_close.json", R), ("huge_arr_objs.json", "any"), ("huge_arr_zeros.json", "any"),
                 ("huge_arr_arrs.json", "any"), ("over16mib.json", R), ("exact16mib_ws.json", "any"),
                 ("sparse3g.json", R), ("long_name.json", "any"), ("long_key.json", R), ("key_escape.json", R),
                 ("nan.json", R), ("hidden_1e400.json", R), ("hidden_float_int.json", "any"),
                 ("hidden_negzero.json", R), ("hidden_2p40.json", "any"), ("hidden_2p40p1.json", R),
                 ("vocab_2p63.json", R), ("vocab_2p64m1.json", R), ("heads_2p40.json", R),
                 ("layers_65536.json", "any"), ("layers_65537.json", R), ("kv_zero.json", R),
                 ("head_dim_zero.json", R), ("head_dim_odd.json", "any"), ("tie_string.json", R),
                 ("meta_unknown.json", R), ("meta_pp_neg.json", R), ("meta_name_obj.json", R),
                 ("capacity_neg.json", R), ("capacity_huge.json", R), ("experts_topk0.json", R),
                 ("experts_2p40.json", "any"), ("hf_llama.json", OK), ("hf_upper.json", R), ("hf_space.json", R),
                 ("hf_type_num.json", R), ("hf_type_null.json", R), ("hf_odd_keys.json", "any"),
                 ("hf_sliding.json", "any"), ("hf_ctrl_key.json", "any"), ("hf_moe_dense_keys.json", R),
                 ("hf_moe_mlp_only_neg.json", R), ("hf_moe_mlp_only_oob.json", R), ("hf_moe_mlp_only_big.json", R),
                 ("hf_moe_mlp_only_dup.json", "any"), ("hf_llama_mlponly.json", R), ("hf_gpt2_npos0.json", R),
                 ("hf_gpt2_ninner_str.json", R), ("hf_gpt2_act_odd.json", "any"), ("hf_hidden_act_odd.json", R),
                 ("hf_dropout_1.json", R), ("hf_dropout_str.json", R), ("kinds_65.json", R), ("kinds_64.json", "any"),
                 ("stack_repeat_huge.json", R), ("stack_repeat_wrap64.json", R), ("stack_100k_names.json", "any"),
                 ("stack_kinds_empty.json", R), ("stack_unused_kind.json", R), ("stack_redefine_base.json", R),
                 ("stack_kind_hidden.json", R), ("stack_repeat0.json", R), ("stack_bothkind.json", R)]:
    a("model-" + fid[:-5], "estimate", "--model", F + fid, "--seq", "16", "--json", out="json", expect=exp)
a("model-table-invalid-utf8-name", "estimate", "--model", F + "invalid_utf8_name.json", "--seq", "16")
a("model-table-nul-name", "estimate", "--model", F + "nul_in_string.json", "--seq", "16")
a("model-table-hf-ctrl-key", "estimate", "--model", F + "hf_ctrl_key.json", "--seq", "16")
a("model-explain-long-name", "explain", "--model", F + "long_name.json", "--seq", "16")
a("model-directory", "estimate", "--model", "/tmp/hostile6/files", expect=R)
a("model-dev-null", "estimate", "--model", "/dev/null", expect=R)
a("model-dev-zero", "estimate", "--model", "/dev/zero", expect=R)
a("model-dev-stdin-regular", "estimate", "--model", "/dev/stdin", "--seq", "16", stdin=F + "tiny.json")
a("model-fifo-with-writer", "estimate", "--model", "/tmp/hostile6/files/fifo_model", "--seq", "16", fifo=("/tmp/hostile6/files/fifo_model", F + "tiny.json"), expect="any")
a("model-symlink-loop", "estimate", "--model", "/tmp/hostile6/files/loop", expect=R, pre="ln -sfn /tmp/hostile6/files/loop /tmp/hostile6/files/loop")
a("model-path-ctrl", "estimate", "--model", "/nonexistent/\x1b[31m\n" + "d" * 300, expect=R)
a("model-and-preset", "estimate", "--model", F + "tiny.json", *G, expect=R)
# --- config files ---
for fid, exp in [("cfg_array.json", R), ("cfg_seq_str.json", R), ("cfg_seq_bool.json", R), ("cfg_tp_null.json", R),
                 ("cfg_dup_seq.json", R), ("cfg_dup_gpu.json", R), ("cfg_gpumem_both.json", R),
                 ("cfg_gpumem_bytes0.json", "any"), ("cfg_gpumem_bytes_neg.json", R), ("cfg_gpumem_bytes_2p63.json", R),
                 ("cfg_gpumem_bytes_float.json", "any"), ("cfg_sp_str.json", R), ("cfg_sp_int.json", R),
                 ("cfg_mw_int.json", R), ("cfg_split_str.json", R), ("cfg_split_4097.json", R), ("cfg_keep_int.json", R),
                 ("cfg_keep_257.json", R), ("cfg_recompute_empty.json", R), ("cfg_unknown.json", R),
                 ("cfg_emptykey.json", R), ("cfg_ws_1p50.json", "any"), ("cfg_ws_over.json", R), ("cfg_bom.json", "any"),
                 ("cfg_nan.json", R), ("cfg_mb_ga_same.json", OK), ("cfg_dropout_conflict.json", "any"),
                 ("cfg_seq512_ws.json", OK), ("cfg_frag_str.json", R), ("cfg_gpu_int.json", R), ("cfg_offload_null.json", R),
                 ("cfg_deep_value.json", R), ("cfg_every_str.json", R), ("cfg_example_key.json", R),
                 ("huge_arr_objs.json", R), ("sparse3g.json", R), ("empty.json", R), ("deep65.json", R)]:
    a("config-" + fid[:-5], "estimate", *G, "--config", F + fid, "--json", out="json", expect=exp)
a("config-same-file-twice", "estimate", *G, "--config", F + "cfg_seq512.json", "--config", F + "cfg_seq512.json")
a("config-flag-overrides-dup", "estimate", *G, "--config", F + "cfg_seq512.json", "--seq", "256", "--json", out="json")
a("config-fifo-with-writer", "estimate", *G, "--config", "/tmp/hostile6/files/fifo_cfg", fifo=("/tmp/hostile6/files/fifo_cfg", F + "cfg_seq512.json"))
a("config-missing-value", "estimate", *G, "--config", expect=R)
a("config-gpu-and-flag-budget", "estimate", *G, "--config", F + "cfg_gpumem_both.json", "--budget", "1GiB", "--json", out="json")
# --- commands ---
a("explain-405b-everything", "explain", *L405, "--tp", "8", "--sp", "--pp", "18", "--vpp", "7", "--micro-batches", "36", "--cp", "2", "--dp", "4", "--zero", "3", "--recompute", "layers:KSCRX", "--offload", "--gpu", "h100-80gb", "--seq", "8192", "--fragmentation", "7.5")
a("timeline-csv-405b-pp126-8322", "timeline", *L405, "--pp", "126", "--micro-batches", "8322", "--csv")
a("timeline-json-405b-pp126-8322", "timeline", *L405, "--pp", "126", "--micro-batches", "8322", "--json", out="json")
a("timeline-json-405b-1m-one-stage", "timeline", *L405, "--micro-batches", "1048576", "--json", out="json")
a("timeline-table-405b-1m-one-stage", "timeline", *L405, "--micro-batches", "1048576")
a("timeline-1m-plus-one", "timeline", *L405, "--micro-batches", "1048577", expect=R)
a("timeline-csv-1024x1024", "timeline", "--model", F + "layers_1024.json", "--seq", "16", "--pp", "1024", "--micro-batches", "1024", "--csv")
a("timeline-json-1024x1024", "timeline", "--model", F + "layers_1024.json", "--seq", "16", "--pp", "1024", "--micro-batches", "1024", "--json", out="json")
a("timeline-65536L-pp64-vpp16", "timeline", "--model", F + "layers_65536.json", "--seq", "16", "--pp", "64", "--vpp", "16", "--micro-batches", "1024", "--json", out="json")
a("timeline-65536L-every1-pp1", "timeline", "--model", F + "layers_65536.json", "--seq", "16", "--recompute", "every:1", "--micro-batches", "16", "--csv")
a("explain-65536L", "explain", "--model", F + "layers_65536.json", "--seq", "16", "--pp", "65536")
a("estimate-65536-kinds-stack", "estimate", "--model", F + "stack_100k_names.json", "--seq", "16", "--pp", "64", "--vpp", "16", "--micro-batches", "1024")
a("fit-1B", "fit", *L405, "--gpu-memory", "1B")
a("fit-huge-budget", "fit", *G, "--gpu-memory", "8000000TiB", "--json", out="json")
a("fit-no-gpu", "fit", *G, expect=R)
a("fit-1m-ops", "fit", *L405, "--pp", "126", "--micro-batches", "8322", "--gpu", "b200", "--json", out="json")
a("fit-65536L", "fit", "--model", F + "layers_65536.json", "--seq", "16", "--pp", "64", "--vpp", "16", "--micro-batches", "1024", "--gpu", "h100-80gb")
a("plan-1024L-pp1", "plan", "--model", F + "layers_1024.json", "--seq", "16", "--gpu-memory", "1GiB", "--json", out="json")
a("plan-1025L-pp1", "plan", "--model", F + "layers_1025.json", "--seq", "16", "--gpu-memory", "1GiB")
a("plan-1m-ops", "plan", *L405, "--pp", "126", "--micro-batches", "8322", "--gpu", "b200")
a("plan-65536L-pp64-vpp16", "plan", "--model", F + "layers_65536.json", "--seq", "16", "--pp", "64", "--vpp", "16", "--micro-batches", "1024", "--gpu-memory", "1GiB")
a("plan-stack-64kinds", "plan", "--model", F + "kinds_64.json", "--seq", "16", "--gpu-memory", "10MiB")
a("plan-1B", "plan", *G, "--gpu-memory", "1B")
a("sweep-16x16-405b", "sweep", *L405, "--sweep-micro-batches", ",".join(str(2**i) for i in range(16)), "--sweep-seqs", ",".join(str(2**i) for i in range(5, 21)), "--json", out="json")
a("sweep-16x16-1m-ops", "sweep", *L405, "--pp", "126", "--micro-batches", "8322", "--sweep-micro-batches", ",".join(str(i) for i in range(1, 17)), "--sweep-seqs", ",".join(str(1024 * i) for i in range(1, 17)))
a("sweep-16x16-65536L", "sweep", "--model", F + "layers_65536.json", "--pp", "64", "--vpp", "16", "--micro-batches", "1024", "--sweep-micro-batches", ",".join(str(i) for i in range(1, 17)), "--sweep-seqs", ",".join(str(16 * i) for i in range(1, 17)))
a("sweep-17", "sweep", *G, "--sweep-seqs", ",".join(["64"] * 17), expect=R)
a("sweep-zero", "sweep", *G, "--sweep-seqs", "0,64", expect=R)
a("sweep-empty", "sweep", *G, "--sweep-seqs", "", expect=R)
a("sweep-beyond-positions", "sweep", *G, "--sweep-seqs", "512,4096", "--json", out="json")
a("sweep-overflow-cells", "sweep", *L405, "--sweep-micro-batches", "18446744073709551615", "--sweep-seqs", "10000000", "--json", out="json")
a("sweep-twice", "sweep", *G, "--sweep-seqs", "64", "--sweep-seqs", "128", expect=R, note="flag given twice")
a("sweep-ctrl", "sweep", *G, "--sweep-seqs", "64," + ESC, expect=R)
a("presets-json", "presets", "--json", out="json")
a("presets-csv", "presets", "--csv")
a("presets-positional", "presets", "extra", expect=R)
a("presets-sweep", "presets", "--sweep-seqs", "1", expect=R)
a("presets-gpu", "presets", "--gpu", "h100-80gb", expect=R)
# --- requests ---
for fid in ["req_blank", "req_crlf", "req_cr_only", "req_bom", "req_all_cmds", "req_invalid", "req_many_small",
            "req_many_estimates", "req_huge_line_ws", "req_huge_arr_objs", "req_huge_arr_arrs", "req_nul_bytes",
            "req_cmd_array", "req_gpu_conflict", "req_ignored_keys", "req_dup_keys", "req_example_mix",
            "req_view_worst", "req_view_1m_one_stage", "req_timeline_allops", "req_timeline_compact", "req_view_many",
            "req_model_inline_deep", "req_esc_preset", "req_dp_huge_view"]:
    a("requests-" + fid[4:], "requests", F + fid + ".txt", out="jsonl", expect=OK)
a("requests-line-over", "requests", F + "req_line_over.txt", expect=R)
a("requests-stdin", "requests", "-", stdin=F + "req_crlf.txt", out="jsonl", expect=OK)
a("requests-no-file", "requests", expect=R)
a("requests-two-files", "requests", F + "req_crlf.txt", F + "req_crlf.txt", expect=R)
a("requests-missing", "requests", "/nonexistent\x1b[31m", expect=R)
a("requests-dev-null", "requests", "/dev/null", expect=OK)
a("requests-fifo", "requests", "/tmp/hostile6/files/fifo_req", fifo=("/tmp/hostile6/files/fifo_req", F + "req_all_cmds.txt"), out="jsonl", expect=OK)
a("requests-json-flag", "requests", "--json", expect=R)
a("requests-empty-name", "requests", "", expect=R)
# --- actmem-validate ---
TM = ["--model", F + "tiny.json", "--seq", "16"]
v("v-no-args", expect=R)
v("v-exec-missing", "--executor", expect=R)
v("v-exec-empty", "--executor", "", *TM, expect=R)
v("v-exec-upper", "--executor", "CPU", *TM, expect=R)
v("v-exec-escape", "--executor", ESC + "cpu\n", *TM, expect=R)
v("v-exec-long", "--executor", "c" * 100000, *TM, expect=R)
v("v-exec-cuda", "--executor", "cuda", *TM)
v("v-exec-twice", "--executor", "cpu", "--executor", "cuda", *TM, expect=R, note="flag given twice with two values")
v("v-no-executor", *TM, expect="any", note="round 3: executor defaults to cpu (round-2 expectation mistake)")
v("v-seed-neg", "--executor", "cpu", "--seed", "-1", *TM, expect=R)
v("v-seed-2p64", "--executor", "cpu", "--seed", "18446744073709551616", *TM, expect=R)
v("v-seed-max", "--executor", "cpu", "--seed", "18446744073709551615", *TM, "--json", out="json")
v("v-seed-hex", "--executor", "cpu", "--seed", "0x10", *TM, expect=R)
v("v-seed-inline", "--executor", "cpu", "--seed=5", *TM, expect="any", note="round 3: --flag=value is supported (round-2 expectation mistake)")
v("v-seed-twice", "--executor", "cpu", "--seed", "1", "--seed", "2", *TM, expect=R, note="flag given twice with two values")
v("v-fd-4097", "--executor", "cpu", "--fd-probes", "4097", *TM, expect=R)
v("v-fd-4096-tiny", "--executor", "cpu", "--fd-probes", "4096", *TM)
v("v-ref-maybe", "--executor", "cpu", "--reference", "maybe", *TM, expect=R)
v("v-ref-on", "--executor", "cpu", "--reference", "on", *TM, "--recompute", "selective")
v("v-405b", "--executor", "cpu", *L405, expect=R)
v("v-pp2", "--executor", "cpu", *TM, "--pp", "2", expect=R)
v("v-tp2-tiny", "--executor", "cpu", *TM, "--tp", "2")
v("v-profile-textbook", "--executor", "cpu", *TM, "--profile", "textbook", expect=R, note="executor fixes megatron; a changed profile should not pass silently")
v("v-optimizer-adamw", "--executor", "cpu", *TM, "--optimizer", "adamw", expect=R, note="executor fixes sgd")
v("v-zero3", "--executor", "cpu", *TM, "--zero", "3", "--dp", "8", expect=R)
v("v-csv", "--executor", "cpu", *TM, "--csv")
v("v-json-bad", "--executor", "cpu", "--seq", "abc", *G, "--json", out="json", expect=R)
v("v-positional-command", "--executor", "cpu", "timeline", *TM, expect=R)
v("v-model-deep", "--executor", "cpu", "--model", F + "deep65.json", expect=R)
v("v-model-sparse", "--executor", "cpu", "--model", F + "sparse3g.json", expect=R)
v("v-moe-tiny", "--executor", "cpu", "--model", F + "experts_topk0.json", "--seq", "16", expect=R)
v("v-seq-huge", "--executor", "cpu", *G, "--seq", "1024", "--micro-batch", "1000000", expect=R)
v("v-help-plus-bad", "--help", "--seed", "abc")

# ---- round 2: follow-ups ----
a("custom-keep-valid-without-custom", "estimate", *G, "--custom-keep", "attn.qkv_in", "--json", out="json", expect=R, note="custom_keep has no effect unless recompute custom")
a("custom-keep-with-full", "estimate", *G, "--recompute", "full", "--custom-keep", "attn.qkv_in", expect=R)
a("sweep-mb-2p64m1", "sweep", *L405, "--sweep-micro-batches", "18446744073709551615", "--json", out="json", expect=R, note="value above the 2^40 limit answered ok with -1")
a("model-nul-trailing", "estimate", "--model", F + "model_nul_trailing.json", "--seq", "16", expect=R, note="text after a NUL byte ignored")
a("config-nul-trailing", "estimate", *G, "--config", F + "cfg_nul_trailing.json", expect=R, note="text after a NUL byte ignored")
a("requests-nul-trailing", "requests", F + "req_nul_trailing.txt", out="jsonl", lines=["err"])
a("requests-gpu-conflict-lines", "requests", F + "req_gpu_conflict.txt", out="jsonl", lines=["err"], note="top-level gpu silently overrides config.gpu")
a("requests-dup-keys-lines", "requests", F + "req_dup_keys.txt", out="jsonl", lines=["err", "err"], note="duplicate JSON keys: last wins")
a("requests-ignored-keys-lines", "requests", F + "req_ignored_keys.txt", out="jsonl", lines=["err"] * 6, note="events/stages/compact_events/sweep/summary with bad values on commands that do not read them")
a("model-hf-gpt2-act-silu", "estimate", "--model", F + "hf_gpt2_act_silu.json", "--seq", "16", expect=R)
a("model-hf-gpt2-act-nonsense", "estimate", "--model", F + "hf_gpt2_act_nonsense.json", "--seq", "16", expect=R)
a("timeline-json-405b-1m-rerun", "timeline", *L405, "--micro-batches", "1048576", "--json", out="json")
v("v-exec-cuda-then-cpu", "--executor", "cuda", "--executor", "cpu", *TM, expect=R, note="flag given twice with two values")
v("v-small128-seq128", "--executor", "cpu", "--model", F + "small128.json", "--seq", "128", note="finite-difference check fails (exit 1) on a plain model")
v("v-small128-seq64-seed7", "--executor", "cpu", "--model", F + "small128.json", "--seq", "64", "--seed", "7")
v("v-small128-fd4096", "--executor", "cpu", "--model", F + "small128.json", "--seq", "128", "--fd-probes", "4096", note="allowed fd-probes on a small model")

def check(c, rc, wall, rss, out, err, files_txt):
    fails = []
    exe = c["argv"][0]
    okcodes = {0, 2} if exe == A else {0, 1, 2, 77}
    if rc not in okcodes: fails.append(f"exit code {rc}")
    if rc < 0 or rc >= 128: fails.append("crash/signal")
    if wall > c["limit_s"]: fails.append(f"wall {wall:.2f}s > {c['limit_s']}s")
    if rss > 500 * 1024: fails.append(f"peak RSS {rss/1024:.0f} MB > 500 MB")
    es = err.decode("utf-8", "replace")
    lines = [l for l in es.split("\n") if l != ""]
    if len(lines) > 1: fails.append(f"stderr has {len(lines)} lines")
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]", es): fails.append("stderr has a raw control/escape char")
    if b"\xff" in err or "\ufffd" in es and b"\xef\xbf\xbd" not in err: fails.append("stderr has invalid UTF-8")
    # echo of user values: any 81-char window of stderr that occurs in a user value
    uvals = [x for x in c["argv"][1:] if len(x) > 80] + [t for t in files_txt if len(t) > 80]
    if uvals and len(es) > 80:
        for i in range(0, len(es) - 80):
            w = es[i:i + 81]
            if any(w in u for u in uvals):
                fails.append("stderr echoes >80 chars of a user value"); break
    if c["expect"] == R and rc == 0: fails.append("exit 0 where rejection expected")
    if c["expect"] == OK and rc != 0: fails.append("rejected where acceptance expected")
    if c["out"] == "json" and out:
        try: json.loads(out)
        except Exception as e: fails.append(f"stdout not JSON: {e}")
    if c["out"] == "jsonl":
        for n, l in enumerate(out.split(b"\n")):
            if not l: continue
            try: json.loads(l)
            except Exception as e: fails.append(f"stdout line {n} not JSON: {e}"); break
    if c.get("lines"):
        got = [("ok" if json.loads(l).get("ok", True) and "error" not in json.loads(l) else "err") for l in out.split(b"\n") if l.strip()]
        if got != c["lines"]: fails.append(f"per-line answers {got}, expected {c['lines']}")
    if exe == A and rc == 0 and err: fails.append("exit 0 with stderr text")
    if exe == A and rc == 0 and re.search(rb"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]", out): fails.append("stdout has raw control char")
    # round 3: the contract, for both tools and every exit code
    if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", out) and not (exe == A and rc == 0 and re.search(rb"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]", out)):
        fails.append("stdout has a raw control/CR/C1/DEL char")
    prefix = "actmem: error: " if exe == A else "actmem-validate: error: "
    if rc == 2 and lines and not lines[0].startswith(prefix): fails.append("stderr line lacks the error prefix")
    if rc == 2 and not lines: fails.append("exit 2 with no stderr line")
    return fails

def main():
    only = set(sys.argv[1:])
    res = open(OUT, "w")
    nfail = 0
    for c in CASES:
        if only and c["id"] not in only: continue
        if c["pre"]: subprocess.run(c["pre"], shell=True)
        writer = None
        if c["fifo"]:
            path, src = c["fifo"]
            if os.path.exists(path): os.unlink(path)
            os.mkfifo(path)
            writer = subprocess.Popen(["sh", "-c", f"cat {shlex.quote(src)} > {shlex.quote(path)}"], start_new_session=True)
        tf = "/tmp/hostile6/time.out"
        stdin = open(c["stdin"], "rb") if c["stdin"] else subprocess.DEVNULL
        t0 = time.time()
        try:
            p = subprocess.run(["/usr/bin/time", "-o", tf, "-f", "%e %M", *c["argv"]], stdin=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=(130 if c["argv"][0] == V else 60))
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = -999, b"", b"TIMEOUT"
        wall_py = time.time() - t0
        if writer:
            if writer.poll() is None: os.killpg(writer.pid, signal.SIGKILL)
            writer.wait()
        try:
            tl = open(tf).read().strip().splitlines()
            last = tl[-1].split()
            wall, rss = float(last[0]), int(last[1])
            if any("Command terminated by signal" in l or "exited with non-zero" in l for l in tl[:-1]):
                pass
            if any("terminated by signal" in l for l in tl[:-1]): rc = 128 + int(tl[0].split()[-1])
        except Exception:
            wall, rss = wall_py, 0
        files_txt = []
        for x in c["argv"][1:]:
            if x.startswith(F) and os.path.isfile(x) and os.path.getsize(x) < (1 << 21):
                files_txt.append(open(x, "rb").read().decode("utf-8", "replace"))
        fails = check(c, rc, wall, rss, out, err, files_txt)
        rec = dict(id=c["id"], cmd=shlex.join(c["argv"])[:600], cmd_len=len(shlex.join(c["argv"])),
                   stdin=c["stdin"], fifo=c["fifo"], exit=rc, wall_s=wall, peak_rss_kb=rss, stdout_bytes=len(out),
                   stderr=err.decode("utf-8", "backslashreplace")[:1000], expect=c["expect"], note=c["note"], fails=fails)
        res.write(json.dumps(rec) + "\n"); res.flush()
        if fails: nfail += 1
        print(f"{'FAIL' if fails else 'ok  '} {c['id']:40s} rc={rc:<4} {wall:5.2f}s {rss//1024:5d}MB out={len(out):<9} {'; '.join(fails)} | {err.decode('utf-8','backslashreplace')[:160].strip()}")
    print(f"TOTAL {len(CASES) if not only else len(only)} cases, {nfail} with failures")
main()
