# ====================================================================== round 6 cases
import math
def nlayers(p):
    rc, out, _ = run_plain([A, "estimate", "--preset", p, "--json"]); return jload(out)["model"]["layers"]
FAM = {"gpt2": "gpt2", "gpt2xl": "gpt2-xl", "llama2": "llama-2-7b", "llama31": "llama-3.1-8b", "mistral": "mistral-7b", "mixtral": "mixtral-8x7b",
       "qwen2": "qwen2.5-7b", "qwen3": "qwen3-8b", "qwen3moe": "qwen3-30b-a3b", "phi3": "phi-3-mini-4k", "gemma2": "gemma-2-9b-it",
       "gemma3": "gemma-3-1b-it", "megatron": "megatron-22b", "gpt3": "gpt3-175b"}
NLY = {f: nlayers(p) for f, p in FAM.items()}
LET = "letters"
def pat(n, s="KSC"): return "layers:" + (s * (n // len(s) + 1))[:n]
# --- A: the bound per preset family, pp / vpp / uneven split
GB = "pattern_bound"
for f, p in FAM.items():
    L = NLY[f]
    base = ["estimate", "--preset", p, "--seq", "1024"]
    b = L // 2 if L % 2 == 0 else None
    if b:
        a(f"b-{f}-pp2-at", *base, "--pp", "2", "--recompute", pat(b), "--json", out="json", expect=OK, group=GB, note=f"L={L}, chunk {b}")
        a(f"b-{f}-pp2-over", *base, "--pp", "2", "--recompute", pat(b + 1), expect=R, group=GB, fn=all_of(msg_has(f"{b+1} letters"), msg_has(f"at most {b}")))
        a(f"b-{f}-pp2-under-repeats", *base, "--pp", "2", "--recompute", "layers:KS", "--json", out="json", expect=OK, group=GB,
          same=[A, *base, "--pp", "2", "--recompute", pat(b, "KS"), "--json"], note="short pattern repeats = explicit full-length")
    if L % 4 == 0:
        c = L // 4
        a(f"b-{f}-pp2vpp2-at", *base, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--recompute", pat(c), "--json", out="json", expect=OK, group=GB)
        a(f"b-{f}-pp2vpp2-over", *base, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--recompute", pat(c + 1), expect=R, group=GB, fn=msg_has(f"at most {c}"))
    # uneven split over pp 3: first stage 1 layer, rest split
    r = L - 1; s2 = r // 2; s3 = r - s2; mx = max(1, s2, s3)
    sp = f"1,{s2},{s3}"
    a(f"b-{f}-split-{sp.replace(',', '-')}-at", *base, "--pp", "3", "--layer-split", sp, "--recompute", pat(mx), "--json", out="json", expect=OK, group=GB)
    a(f"b-{f}-split-over", *base, "--pp", "3", "--layer-split", sp, "--recompute", pat(mx + 1), expect=R, group=GB, fn=msg_has(f"at most {mx}"))
# uneven split with vpp: ceil(stage/vpp)
a("b-gpt2-split-vpp-5-7-at", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "5,7", "--recompute", "layers:KSCK", "--json", out="json", expect=OK, group=GB)
a("b-gpt2-split-vpp-5-7-over", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "5,7", "--recompute", "layers:KSCKS", expect=R, group=GB, fn=msg_has("at most 4"))
a("b-gpt2-split-vpp3-1-11-at", "estimate", *G, "--pp", "2", "--vpp", "3", "--micro-batches", "4", "--layer-split", "1,11", "--recompute", "layers:KSCK", "--json", out="json", expect=ANY, group=GB, note="ceil(11/3)=4; stage 0 has 1 layer < vpp 3")
a("b-gpt2-split-vpp2-3-9-at", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "3,9", "--recompute", "layers:KSCKS", "--json", out="json", expect=OK, group=GB)
a("b-gpt2-split-vpp2-3-9-over", "estimate", *G, "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "3,9", "--recompute", "layers:KSCKSC", expect=R, group=GB, fn=msg_has("at most 5"))
a("b-gpt2-pp12-1letter", "estimate", *G, "--pp", "12", "--recompute", "layers:C", "--json", out="json", expect=OK, group=GB, same=[A, "estimate", *G, "--pp", "12", "--recompute", "full", "--json"], note="all-C = full? (policy label may differ)")
a("b-gpt2-pp12-2letters", "estimate", *G, "--pp", "12", "--recompute", "layers:CK", expect=R, group=GB, fn=msg_has("at most 1"))
a("b-gpt2-pp1-12", "estimate", *G, "--recompute", pat(12), "--json", out="json", expect=OK, group=GB)
a("b-gpt2-pp1-13", "estimate", *G, "--recompute", pat(13), expect=R, group=GB, fn=msg_has("at most 12"))
a("b-gpt2-pp1-huge", "estimate", *G, "--recompute", "layers:" + "K" * 5000, expect=R, group=GB, fn=msg_has("5000 letters"))
a("b-gpt2-lowercase-over", "estimate", *G, "--pp", "2", "--recompute", "layers:kkkkkkk", expect=R, group=GB)
a("b-gpt2-bad-letter-over", "estimate", *G, "--pp", "2", "--recompute", "layers:KKKKKKQ", expect=R, group=GB)
# --- B: every command at/over the bound (gpt2 pp2, bound 6)
GC = "pattern_every_command"
P6, P7 = pat(6), pat(7)
PA = [*G, "--pp", "2", "--seq", "512"]
for nm, pp_ in (("at", P6), ("over", P7)):
    e = OK if nm == "at" else R
    fx = msg_has("at most 6") if nm == "over" else None
    a(f"c-estimate-{nm}", "estimate", *PA, "--recompute", pp_, expect=e, group=GC, fn=fx)
    a(f"c-explain-{nm}", "explain", *PA, "--recompute", pp_, expect=e, group=GC, fn=fx)
    a(f"c-timeline-json-{nm}", "timeline", *PA, "--recompute", pp_, "--json", out="json", expect=e, group=GC, fn=fx)
    a(f"c-timeline-csv-{nm}", "timeline", *PA, "--recompute", pp_, "--csv", expect=e, group=GC, fn=fx or csv_ok)
    a(f"c-fit-{nm}", "fit", *G, "--pp", "2", "--recompute", pp_, "--gpu", "a100-40gb", "--json", out="json", expect=e, group=GC, fn=fx)
    a(f"c-plan-{nm}", "plan", *PA, "--recompute", pp_, "--gpu", "a100-40gb", "--json", out="json", expect=ANY, group=GC, note="plan may ignore --recompute (it searches); it must not use an over-long pattern silently")
    a(f"c-sweep-{nm}", "sweep", *G, "--pp", "2", "--recompute", pp_, "--sweep-micro-batches", "1,2", "--sweep-seqs", "256,512", "--json", out="json", expect=e, group=GC, fn=fx)
req("c-requests-at-over", "c_req_bound.txt", ["ok", "err", "ok", "err"], group=GC, fn=all_of(msg_has("at most 6", 1), msg_has("at most 3", 3)))
lines("c_req_bound.txt", {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "recompute": P6}},
      {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "recompute": P7}},
      {"command": "timeline", "preset": "gpt2", "config": {"pp": 2, "vpp": 2, "micro_batches": 4, "recompute": "layers:KSC"}},
      {"command": "fit", "preset": "gpt2", "gpu": "a100-40gb", "config": {"pp": 2, "vpp": 2, "micro_batches": 4, "recompute": "layers:KSCK"}})
# validator: one device, bound = L
wj("v4.json", {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 4,
               "intermediate_size": 128, "vocab_size": 64, "max_position_embeddings": 128})
v("c-validate-at", "--model", D + "v4.json", "--seq", "16", "--recompute", "layers:KSCK", group=GC, tmo=130, note="4 letters, 4 layers")
v("c-validate-over", "--model", D + "v4.json", "--seq", "16", "--recompute", "layers:KSCKS", expect=R, group=GC, fn=msg_has("at most 4"))
v("c-validate-short", "--model", D + "v4.json", "--seq", "16", "--recompute", "layers:KC", group=GC, tmo=130)
v("c-validate-over-huge", "--model", D + "v4.json", "--seq", "16", "--recompute", "layers:" + "S" * 3000, expect=R, group=GC, fn=msg_has("3000 letters"))
v("c-validate-gpt2-over", "--model", D + "v_gpt2.json", "--seq", "16", "--recompute", "layers:" + "K" * 9, expect=R, group=GC)
# --- C: plan's output fed back to estimate
GPL = "plan_feedback"
def plan_feed(pargs, gpu):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        r = []
        pts = [d] if d.get("found") else []
        for k, vv in d.items():
            if isinstance(vv, list): pts += [x for x in vv if isinstance(x, dict) and "policy" in x][:40]
        seen = set()
        for pt in pts:
            key = (pt["policy"], bool(pt.get("offload")))
            if key in seen: continue
            seen.add(key)
            argv = [A, "estimate", *pargs, "--gpu", gpu, "--recompute", pt["policy"], *(["--offload"] if pt.get("offload") else []), "--json"]
            rc2, o2, e2 = run_plain(argv); j = jload(o2)
            if rc2 != 0: r.append(f"plan's policy {pt['policy']} refused by estimate: {e2.decode()[:160]}"); continue
            if j.get("peak_bytes") != pt.get("peak_bytes"): r.append(f"{pt['policy']}: plan peak {pt.get('peak_bytes')} != estimate {j.get('peak_bytes')}")
            if len(r) > 3: break
        return r
    return f
for nm, pargs, gpu in [("llama2-pp2", ["--preset", "llama-2-7b", "--seq", "4096", "--pp", "2"], "a100-80gb"),
                       ("llama2-pp2vpp2", ["--preset", "llama-2-7b", "--seq", "4096", "--pp", "2", "--vpp", "2", "--micro-batches", "4"], "a100-40gb"),
                       ("llama2-pp4vpp2", ["--preset", "llama-2-7b", "--seq", "4096", "--pp", "4", "--vpp", "2", "--micro-batches", "8"], "a100-40gb"),
                       ("llama2-split-uneven", ["--preset", "llama-2-7b", "--seq", "4096", "--pp", "3", "--layer-split", "4,14,14"], "a100-40gb"),
                       ("llama2-split-vpp", ["--preset", "llama-2-7b", "--seq", "4096", "--pp", "2", "--vpp", "2", "--micro-batches", "4", "--layer-split", "9,23"], "a100-40gb"),
                       ("gpt2-pp2", ["--preset", "gpt2", "--seq", "1024", "--micro-batch", "16", "--pp", "2"], "rtx-4090"),
                       ("gpt2-pp3-split", ["--preset", "gpt2", "--seq", "1024", "--micro-batch", "16", "--pp", "3", "--layer-split", "2,5,5"], "rtx-4090"),
                       ("gemma2-pp2", ["--preset", "gemma-2-9b-it", "--seq", "4096", "--pp", "2"], "a100-40gb"),
                       ("gemma3-pp2", ["--preset", "gemma-3-1b-it", "--seq", "8192", "--micro-batch", "4", "--pp", "2"], "rtx-4090"),
                       ("qwen3moe-pp4", ["--preset", "qwen3-30b-a3b", "--seq", "4096", "--pp", "4"], "a100-40gb"),
                       ("phi3-pp1", ["--preset", "phi-3-mini-4k", "--seq", "4096", "--micro-batch", "4"], "a100-40gb"),
                       ("mixtral-pp4vpp2", ["--preset", "mixtral-8x7b", "--seq", "4096", "--pp", "4", "--vpp", "2", "--micro-batches", "8", "--tp", "2"], "h100-80gb"),
                       ("gpt3-pp8vpp3", ["--preset", "gpt3-175b", "--seq", "2048", "--pp", "8", "--vpp", "3", "--micro-batches", "8", "--tp", "8", "--sp"], "h100-80gb")]:
    a(f"pl-{nm}", "plan", *pargs, "--gpu", gpu, "--json", out="json", expect=OK, group=GPL, fn=plan_feed(pargs, gpu))
# plan's policy through requests
# --- D: every CLI command x every preset family
GF = "command_x_family"
for f, p in FAM.items():
    pa = ["--preset", p, "--seq", "2048"]
    a(f"f-{f}-estimate", "estimate", *pa, "--json", out="json", expect=OK, group=GF, fn=timeline_agrees(pa))
    a(f"f-{f}-explain", "explain", *pa, "--tp", "2", expect=OK, group=GF)
    a(f"f-{f}-timeline-csv", "timeline", *pa, "--pp", "2", "--csv", expect=(OK if NLY[f] % 2 == 0 else ANY), group=GF, fn=csv_ok)
    a(f"f-{f}-fit", "fit", "--preset", p, "--gpu", "h100-80gb", "--tp", "8", "--json", out="json", expect=ANY, group=GF, fn=fit_verify(["--preset", p, "--tp", "8"], "h100-80gb"))
    a(f"f-{f}-plan", "plan", *pa, "--gpu", "h100-80gb", "--dp", "8", "--zero", "3", "--json", out="json", expect=OK, group=GF, fn=plan_feed([*pa, "--dp", "8", "--zero", "3"], "h100-80gb"))
    a(f"f-{f}-sweep", "sweep", "--preset", p, "--sweep-micro-batches", "1,2", "--sweep-seqs", "512,1024", "--json", out="json", expect=OK, group=GF,
      fn=sweep_verify(["--preset", p], [1, 2], [512, 1024]))
# --- E: config files merged with flags
GM = "config_merge"
cf_pp2 = wj("m_pp2_p6.json", {"pp": 2, "recompute": P6, "seq": 512})
a("m-file-alone", "estimate", *G, "--config", cf_pp2, "--json", out="json", expect=OK, group=GM, fn=cfg_field("recompute", P6))
a("m-flag-pp4-over", "estimate", *G, "--config", cf_pp2, "--pp", "4", expect=R, group=GM, fn=msg_has("at most 3"), note="file pattern 6 letters, flag makes chunk 3")
a("m-flag-vpp2-over", "estimate", *G, "--config", cf_pp2, "--vpp", "2", "--micro-batches", "4", expect=R, group=GM, fn=msg_has("at most 3"))
a("m-flag-recompute-overrides", "estimate", *G, "--config", cf_pp2, "--pp", "4", "--recompute", "selective", "--json", out="json", expect=OK, group=GM, fn=cfg_field("recompute", "selective"))
a("m-flag-pp1-ok", "estimate", *G, "--config", cf_pp2, "--pp", "1", "--json", out="json", expect=OK, group=GM, fn=cfg_field("pp", 1))
cf_split = wj("m_split.json", {"pp": 3, "layer_split": [2, 5, 5]})
a("m-split-file-pp-flag-conflict", "estimate", *G, "--config", cf_split, "--pp", "2", expect=R, group=GM, note="layer_split has 3 entries, pp flag 2")
a("m-split-file-pattern-flag-at", "estimate", *G, "--config", cf_split, "--recompute", pat(5), "--json", out="json", expect=OK, group=GM)
a("m-split-file-pattern-flag-over", "estimate", *G, "--config", cf_split, "--recompute", pat(6), expect=R, group=GM, fn=msg_has("at most 5"))
a("m-split-file-split-flag", "estimate", *G, "--config", cf_split, "--layer-split", "4,4,4", "--recompute", pat(4), "--json", out="json", expect=OK, group=GM)
cf_keep = wj("m_custom.json", {"recompute": "custom", "custom_keep": ["attn.q"]})
a("m-custom-file-flag-layers", "estimate", *G, "--config", cf_keep, "--recompute", "layers:KS", expect=ANY, group=GM, note="custom_keep in file with a non-X pattern flag: must be used or refused")
a("m-custom-file-flag-layersX", "estimate", *G, "--config", cf_keep, "--recompute", "layers:KX", "--json", out="json", expect=ANY, group=GM)
cf_bad = wj("m_bad_type.json", {"pp": "2"})
a("m-file-pp-string", "estimate", *G, "--config", cf_bad, "--pp", "2", expect=ANY, group=GM)
cf_dup = w("m_dupkey.json", '{"pp": 2, "pp": 4, "recompute": "layers:KSCKSC"}')
a("m-file-dupkey", "estimate", *G, "--config", cf_dup, expect=ANY, group=GM, note="duplicate key: refused, or last-wins (then 6 > 3 refused)")
cf_seq = wj("m_seq.json", {"seq": 4096, "micro_batch": 2})
a("m-file-seq-flag-seq", "estimate", *G, "--config", cf_seq, "--seq", "512", "--json", out="json", expect=OK, group=GM, fn=all_of(cfg_field("seq", 512), cfg_field("micro_batch", 2)))
a("m-file-for-fit", "fit", *G, "--config", cf_pp2, "--gpu", "a100-40gb", "--json", out="json", expect=OK, group=GM)
a("m-file-for-sweep-over", "sweep", *G, "--config", cf_pp2, "--pp", "4", "--sweep-micro-batches", "1", "--sweep-seqs", "256", expect=R, group=GM)
a("m-file-for-plan", "plan", *G, "--config", cf_pp2, "--gpu", "a100-40gb", "--json", out="json", expect=ANY, group=GM)
cf_gpu = wj("m_gpu.json", {"gpu": "h100-80gb"})
a("m-file-gpu-flag-budget", "estimate", *G, "--config", cf_gpu, "--budget", "10GiB", expect=ANY, group=GM, note="gpu in file + budget flag: used or conflict")
a("m-file-gpu-flag-gpumem", "estimate", *G, "--config", cf_gpu, "--gpu-memory", "40GiB", expect=ANY, group=GM)
cf_tiny = wj("m_cfg_for_v.json", {"seq": 16, "recompute": "layers:KSCKS"})
v("m-validate-file-over", "--model", D + "v4.json", "--config", cf_tiny, expect=R, group=GM, fn=msg_has("at most 4"))
v("m-validate-file-flag-fix", "--model", D + "v4.json", "--config", cf_tiny, "--recompute", "layers:KS", group=GM, tmo=130)
# --- F: request streams mixing good and bad lines
GR = "requests_mixed"
lines("r_mix1.txt", {"command": "estimate", "preset": "gpt2"}, "not json", {"command": "estimate", "preset": "nope"},
      {"command": "explain", "preset": "llama-2-7b", "config": {"tp": 2}}, "", {"command": "plan", "preset": "gpt2", "gpu": "a100-40gb", "config": {"pp": 2}},
      {"command": "fit", "preset": "gemma-3-1b-it", "gpu": "rtx-4090"}, "[1,2]", {"command": "sweep", "preset": "gpt2"})
req("r-mix1", "r_mix1.txt", ["ok", "err", "err", "ok", "ok", "ok", "err", "*"], group=GR, note="blank line skipped")
lines("r_mix2.txt", *([{"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "recompute": pat(k)}} for k in range(1, 9)]))
req("r-mix2-lengths", "r_mix2.txt", ["ok"] * 6 + ["err"] * 2, group=GR)
lines("r_mix3.txt", {"command": "estimate", "model_text": json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "attn_logit_softcapping": 50.0})},
      {"command": "estimate", "model_text": json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100})},
      {"command": "estimate", "model": {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "qk_norm": True}},
      {"command": "estimate", "model": {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "sandwich_norm": False}})
req("r-mix3-gpt2-keys", "r_mix3.txt", ["err", "ok", "err", "*"], group=GR, fn=all_of(msg_has("gpt2", 0), msg_has("qk_norm", 2), msg_has("attn_logit_softcapping", 0)))
w("r_mix4.txt", b'{"command":"estimate","preset":"gpt2"}\r\n\xff\xfe\n{"command":"estimate","preset":"gpt2"}\n\x00\n{"command":"estimate","preset":"gpt2","config":{"seq":0}}\n{"command":"estimate","preset":"gpt2"}')
req("r-mix4-bytes-crlf-no-final-nl", "r_mix4.txt", ["*", "err", "ok", "err", "err", "ok"], group=GR)
lines("r_mix5.txt", *([{"command": "estimate", "preset": "gpt2"}] * 50), {"command": "estimate", "preset": "gpt2", "config": {"tp": 5}}, *([{"command": "estimate", "preset": "gpt2"}] * 20))
req("r-mix5-71", "r_mix5.txt", ["ok"] * 50 + ["err"] + ["ok"] * 20, group=GR)
lines("r_mix6.txt", {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "vpp": 2, "micro_batches": 4, "layer_split": [5, 7], "recompute": "layers:KSCK"}},
      {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "vpp": 2, "micro_batches": 4, "layer_split": [5, 7], "recompute": "layers:KSCKS"}},
      {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "layer_split": [5, 7], "recompute": "layers:KSCKSCK"}},
      {"command": "estimate", "preset": "gpt2", "config": {"pp": 2, "layer_split": [5, 7], "recompute": "layers:KSCKSCKS"}})
req("r-mix6-split", "r_mix6.txt", ["ok", "err", "ok", "err"], group=GR, fn=all_of(msg_has("at most 4", 1), msg_has("at most 7", 3)))
lines("r_mix7.txt", {"command": "estimate", "preset": "gpt2", "config": {"recompute": "layers:K\u0007\u009b" + "K" * 200}},
      {"command": "estimate", "preset": "gpt2", "config": {"gpu": "x" * 300 + "\u001b[31m"}}, {"command": "estimate", "preset": "gpt2"})
req("r-mix7-ctrl-long", "r_mix7.txt", ["err", "err", "ok"], group=GR)
lines("r_mix8.txt", {"command": "plan", "preset": "llama-2-7b", "gpu": "a100-80gb", "config": {"pp": 2, "seq": 4096}},
      {"command": "estimate", "preset": "llama-2-7b", "gpu": "a100-80gb", "config": {"pp": 2, "seq": 4096, "recompute": "layers:KKKKKSSSSSSSSSSS"}},
      {"command": "estimate", "preset": "llama-2-7b", "gpu": "a100-80gb", "config": {"pp": 4, "seq": 4096, "recompute": "layers:KKKKKSSSSSSSSSSS"}})
req("r-mix8-plan-then-estimate", "r_mix8.txt", ["ok", "ok", "err"], group=GR, fn=msg_has("at most 8", 2))
a("r-stdin-mixed", "requests", "-", stdin=D + "r_mix1.txt", out="jsonl", lines=["ok", "err", "err", "ok", "ok", "ok", "err", "*"], group=GR)
# --- G: messages holding user text
GU = "user_text"
LONGC = "\u0001\u001b[2J\u007f\u0085\u009b\u200b\u202e" + "é" * 100 + "Z" * 200
a("u-gpu-long-ctrl", "estimate", *G, "--gpu", LONGC, expect=R, group=GU, fn=msg_has("gpu"))
a("u-preset-long-ctrl", "estimate", "--preset", LONGC, expect=R, group=GU)
a("u-recompute-long-ctrl", "estimate", *G, "--recompute", "layers:" + LONGC, expect=R, group=GU, fn=msg_has("recompute"))
a("u-recompute-over-ctrl", "estimate", *G, "--recompute", "layers:" + "K" * 20 + "\u001b", expect=R, group=GU)
a("u-keep-long-ctrl", "estimate", *G, "--recompute", "custom", "--custom-keep", "attn.q," + LONGC, expect=R, group=GU)
a("u-dtype-ctrl", "estimate", *G, "--dtype", "bf16\u0000x" if False else "bf16\u0007", expect=R, group=GU, fn=msg_has("dtype"))
a("u-split-long", "estimate", *G, "--pp", "2", "--layer-split", ",".join(["6"] * 300), expect=R, group=GU)
a("u-flag-unknown-long", "estimate", *G, "--" + "x" * 500 + "\u009b", expect=R, group=GU)
a("u-model-path-ctrl", "estimate", "--model", D + "no\u001bpe" + "y" * 200 + ".json", expect=R, group=GU)
a("u-budget-ctrl", "estimate", *G, "--budget", "10GiB\u0085", expect=R, group=GU, fn=msg_has("budget"))
a("u-sweep-seqs-ctrl", "sweep", *G, "--sweep-seqs", "512,\u001b" + "9" * 200, expect=R, group=GU)
wj("u_cfg_key.json", {"se\u009bq" + "k" * 200: 16})
a("u-config-key-long-ctrl", "estimate", *G, "--config", D + "u_cfg_key.json", expect=R, group=GU)
wj("u_model_type.json", {"model_type": "gp\u001bt2" + "t" * 200, "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100})
a("u-model-type-long-ctrl", "estimate", "--model", D + "u_model_type.json", expect=R, group=GU)
wj("u_act.json", {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
                  "intermediate_size": 128, "vocab_size": 64, "hidden_act": "si\u0085lu" + "u" * 150})
a("u-hidden-act-long-ctrl", "estimate", "--model", D + "u_act.json", expect=R, group=GU, fn=msg_has("hidden_act"))
v("u-validate-act-long-ctrl", "--model", D + "u_act.json", "--seq", "16", expect=R, group=GU)
v("u-validate-executor-ctrl", "--model", D + "v4.json", "--executor", "cu\u001bda" + "a" * 200, expect=R, group=GU)
# --- H: gpt2 refused keys, every entry point
GG2 = "gpt2_keys"
gp = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 128}
for key, val in [("attn_logit_softcapping", 50.0), ("final_logit_softcapping", 30.0), ("sandwich_norm", True), ("gemma_norm", True), ("qk_norm", True),
                 ("sandwich_norm", False), ("qk_norm", False), ("attn_logit_softcapping", None)]:
    fn_ = f"g2_{key}_{str(val).lower()}.json"; wj(fn_, dict(gp, **{key: val}))
    expk = R if val not in (False, None) else ANY
    a(f"g2-{key}-{str(val).lower()}-estimate", "estimate", "--model", D + fn_, "--seq", "16", "--json", out="json", expect=expk, group=GG2,
      fn=(msg_has(key) if expk == R else None), note="explicit false/null may be accepted as a no-op")
    if expk == R:
        a(f"g2-{key}-plan", "plan", "--model", D + fn_, "--seq", "16", "--gpu", "a100-40gb", expect=R, group=GG2, fn=msg_has(key))
        v(f"g2-{key}-validate", "--model", D + fn_, "--seq", "16", expect=R, group=GG2, fn=msg_has(key))
