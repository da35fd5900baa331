#!/usr/bin/env python3
"""Round 3, step 2: new hostile inputs aimed at what changed since round 2 (model_text, Python's
NaN/Infinity tokens, qwen3/qwen3_moe/phi3, C1/DEL in user strings, the new conflict/refusal rules
at their edges, the 2^19 pipeline-op bound, actmem-validate's new CPU bounds). Files are generated
under /tmp/hostile6/files/s4/. One JSON line per input in /tmp/hostile6/step2/results_new.jsonl.
Usage: python3 run3.py [id ...]"""
import json, os, re, shlex, subprocess, sys, time

A = "/tmp/hostile6/bin/actmem"; V = "/tmp/hostile6/bin/actmem-validate"
D = "/tmp/hostile6/files/s5/"
OUT = "/tmp/hostile6/step2/results_run5.jsonl"
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

# ====================================================================== round 5 cases
import copy
PR = ["qwen3-8b", "qwen3-30b-a3b", "phi-3-mini-4k", "gemma-2-9b-it", "gemma-3-1b-it"]
LAY = {"tp2sp": ["--tp", "2", "--sp"], "pp2": ["--pp", "2"], "cp2": ["--cp", "2"], "zero3dp8": ["--dp", "8", "--zero", "3"],
       "offload-sel": ["--offload", "--recompute", "selective"], "pp2vpp2": ["--pp", "2", "--vpp", "2", "--grad-accum", "4"]}
def est_peak(argv):
    rc, out, _ = run_plain(argv); d = jload(out)
    return (d or {}).get("peak_bytes") if rc == 0 else None
def timeline_agrees(pargs):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        t = est_peak([A, "timeline", *pargs, "--json"])
        if t is not None and t != d.get("peak_bytes"): return [f"estimate peak {d.get('peak_bytes')} != timeline peak {t}"]
    return f
def csv_ok(rc, out, es, d, ans):
    if rc != 0: return []
    import csv, io
    rows = list(csv.reader(io.StringIO(out.decode("utf-8", "replace"))))
    if not rows: return ["empty csv"]
    n = len(rows[0]); bad = [i for i, r in enumerate(rows) if len(r) != n]
    if bad: return [f"csv rows with a column count unlike the header: {bad[:5]}"]
def fit_verify(pargs, gpu):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        r = []
        mb, sq = d.get("max_micro_batch"), d.get("max_seq")
        base = [A, "estimate", *pargs, "--gpu", gpu, "--json"]
        if mb and not d.get("micro_batch_at_limit"):
            j = jload(run_plain(base + ["--micro-batch", str(mb)])[1]); k = jload(run_plain(base + ["--micro-batch", str(mb + 1)])[1])
            if j and not j.get("fits"): r.append(f"fit says micro_batch {mb} fits; estimate says it does not")
            if k and k.get("fits"): r.append(f"fit says {mb} is the largest; estimate says {mb+1} fits")
        if sq and not d.get("seq_at_limit") and d.get("seq_step") == 1:
            sargs = [x for x in pargs]
            j = jload(run_plain(base + ["--seq", str(sq), "--micro-batch", "1"])[1]); k = jload(run_plain(base + ["--seq", str(sq + 1), "--micro-batch", "1"])[1])
            if j and not j.get("fits"): r.append(f"fit says seq {sq} fits; estimate says not")
            if k and k.get("fits"): r.append(f"fit says seq {sq} is the largest; estimate says {sq+1} fits")
        return r
    return f
def plan_verify(pargs, gpu):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d or not d.get("found"): return []
        argv = [A, "estimate", *pargs, "--gpu", gpu, "--recompute", d["policy"], *(["--offload"] if d.get("offload") else []), "--json"]
        j = jload(run_plain(argv)[1])
        if not j: return ["estimate with the planned policy failed: " + run_plain(argv)[2].decode()[:200]]
        r = []
        if not j.get("fits"): r.append("planned policy does not fit per estimate")
        if j.get("peak_bytes") != d.get("peak_bytes"): r.append(f"plan peak {d.get('peak_bytes')} != estimate {j.get('peak_bytes')}")
        return r
    return f
def sweep_verify(pargs, mbs, seqs):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        r = []
        for i, mb in enumerate(mbs):
            for jx, s in enumerate(seqs):
                e = est_peak([A, "estimate", *pargs, "--micro-batch", str(mb), "--seq", str(s), "--json"])
                try: got = d["peak_bytes"][i][jx]
                except Exception: got = None
                if e != got: r.append(f"sweep cell mb={mb} seq={s} {got} != estimate {e}")
        return r
    return f
GP = "presets_x_layouts"
def same_numbers(argv):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        b = jload(run_plain(argv)[1])
        if not b: return ["baseline failed"]
        r = []
        for k in ("peak_bytes", "activations", "static", "total_bytes"):
            if d.get(k) != b.get(k): r.append(f"{k} differs from the equivalent input")
        if [s_.get("total_bytes") for s_ in d.get("stages", [])] != [s_.get("total_bytes") for s_ in b.get("stages", [])]: r.append("stage totals differ")
        return r
    return f
for p in PR:
    for lname, lay in LAY.items():
        pa = ["--preset", p, "--seq", "4096", *lay]
        exp = OK
        if p == "gemma-3-1b-it" and lname == "pp2vpp2": exp = ANY   # 26 layers, pp*vpp=4 does not divide
        if p == "gemma-2-9b-it" and lname == "pp2vpp2": exp = ANY   # 42 layers
        a(f"p-{p}-{lname}-estimate", "estimate", *pa, "--json", out="json", expect=exp, group=GP, fn=timeline_agrees(pa))
    a(f"p-{p}-tp2-explain", "explain", "--preset", p, "--seq", "4096", "--tp", "2", "--sp", expect=OK, group=GP)
    a(f"p-{p}-pp2-csv", "timeline", "--preset", p, "--seq", "512", "--pp", "2", "--csv", expect=OK, group=GP, fn=csv_ok)
    a(f"p-{p}-cp2-timeline-json", "timeline", "--preset", p, "--seq", "512", "--cp", "2", "--json", out="json", expect=OK, group=GP)
    a(f"p-{p}-fit-h100", "fit", "--preset", p, "--gpu", "h100-80gb", "--json", out="json", expect=OK, group=GP, fn=fit_verify(["--preset", p], "h100-80gb"))
    a(f"p-{p}-fit-4090-tp2", "fit", "--preset", p, "--gpu", "rtx-4090", "--tp", "2", "--json", out="json", expect=OK, group=GP,
      fn=fit_verify(["--preset", p, "--tp", "2"], "rtx-4090"))
    a(f"p-{p}-plan-h200", "plan", "--preset", p, "--seq", "4096", "--gpu", "h200-141gb", "--json", out="json", expect=OK, group=GP,
      fn=plan_verify(["--preset", p, "--seq", "4096"], "h200-141gb"))
    a(f"p-{p}-plan-zero3-4090", "plan", "--preset", p, "--seq", "2048", "--dp", "8", "--zero", "3", "--gpu", "rtx-4090", "--json", out="json", expect=OK, group=GP,
      fn=plan_verify(["--preset", p, "--seq", "2048", "--dp", "8", "--zero", "3"], "rtx-4090"))
    a(f"p-{p}-sweep", "sweep", "--preset", p, "--sweep-micro-batches", "1,3", "--sweep-seqs", "512,1000", "--json", out="json", expect=OK, group=GP,
      fn=sweep_verify(["--preset", p], [1, 3], [512, 1000]))
# ep
a("p-qwen3-30b-ep4-dp4", "estimate", "--preset", "qwen3-30b-a3b", "--seq", "4096", "--ep", "4", "--dp", "4", "--json", out="json", expect=OK, group=GP,
  differs=[A, "estimate", "--preset", "qwen3-30b-a3b", "--seq", "4096", "--dp", "4", "--json"], fn=timeline_agrees(["--preset", "qwen3-30b-a3b", "--seq", "4096", "--ep", "4", "--dp", "4"]))
a("p-qwen3-30b-ep3", "estimate", "--preset", "qwen3-30b-a3b", "--ep", "3", "--dp", "3", expect=R, group=GP, fn=msg_has("ep"))
a("p-qwen3-30b-ep4-dp2", "estimate", "--preset", "qwen3-30b-a3b", "--ep", "4", "--dp", "2", expect=R, group=GP)
a("p-qwen3-30b-ep256", "estimate", "--preset", "qwen3-30b-a3b", "--ep", "256", "--dp", "256", expect=R, group=GP, note="128 experts")
for p in ["qwen3-8b", "phi-3-mini-4k", "gemma-2-9b-it", "gemma-3-1b-it"]:
    a(f"p-{p}-ep2-dense", "estimate", "--preset", p, "--ep", "2", "--dp", "2", expect=R, group=GP)
a("p-gemma-3-1b-tp4", "estimate", "--preset", "gemma-3-1b-it", "--tp", "4", "--json", out="json", expect=ANY, group=GP, note="a=4 kv=1")
a("p-gemma-3-1b-tp8", "estimate", "--preset", "gemma-3-1b-it", "--tp", "8", expect=R, group=GP, note="a=4")
a("p-phi3-tp3", "estimate", "--preset", "phi-3-mini-4k", "--tp", "3", expect=R, group=GP)
a("p-qwen3-30b-tp8-kv4", "estimate", "--preset", "qwen3-30b-a3b", "--tp", "8", "--json", out="json", expect=OK, group=GP, note="tp multiple of kv=4")
a("p-gemma-2-pp3-split", "estimate", "--preset", "gemma-2-9b-it", "--pp", "3", "--layer-split", "14,14,14", "--json", out="json", expect=OK, group=GP,
  fn=same_numbers([A, "estimate", "--preset", "gemma-2-9b-it", "--pp", "3", "--json"]))
a("p-gemma-3-1b-pp2-split-bad", "estimate", "--preset", "gemma-3-1b-it", "--pp", "2", "--layer-split", "13,14", expect=R, group=GP)
a("p-qwen3-8b-cp3-seq", "estimate", "--preset", "qwen3-8b", "--cp", "3", "--seq", "4096", expect=R, group=GP, note="s not divisible by cp")
# recompute policies
GRC = "recompute"
NL = {"qwen3-8b": 36, "qwen3-30b-a3b": 48, "phi-3-mini-4k": 32, "gemma-2-9b-it": 42, "gemma-3-1b-it": 26}
def mono(pa, lower):
    def f(rc, out, es, d, ans):
        if rc != 0 or not d: return []
        b = jload(run_plain([A, "estimate", *pa, "--recompute", lower, "--json"])[1])
        if b and d["activations"]["layers_bytes"] < b["activations"]["layers_bytes"]:
            return [f"layers_bytes {d['activations']['layers_bytes']} below {lower}'s {b['activations']['layers_bytes']}"]
    return f
for p in PR:
    pa = ["--preset", p, "--seq", "2048", "--pp", "2"]
    a(f"rc-{p}-none", "estimate", *pa, "--recompute", "none", "--json", out="json", expect=OK, group=GRC, fn=mono(pa, "selective"))
    a(f"rc-{p}-selective", "estimate", *pa, "--recompute", "selective", "--json", out="json", expect=OK, group=GRC, fn=mono(pa, "full"))
    a(f"rc-{p}-full", "estimate", *pa, "--recompute", "full", "--json", out="json", expect=OK, group=GRC)
    a(f"rc-{p}-every2", "estimate", *pa, "--recompute", "every:2", "--json", out="json", expect=OK, group=GRC)
    a(f"rc-{p}-every5", "estimate", *pa, "--recompute", "every:5", "--json", out="json", expect=ANY, group=GRC)
    a(f"rc-{p}-layers-all-K", "estimate", *pa, "--recompute", "layers:" + "K" * NL[p], "--json", out="json", expect=R, group=GRC,
      fn=msg_has(f"at most {NL[p] // 2} layers"), note="round 6: L letters > the L/2-layer chunk at pp 2 is refused (intended change)")
    a(f"rc-{p}-layers-short", "estimate", *pa, "--recompute", "layers:" + "K" * (NL[p] - 1), expect=R, group=GRC,
      note="a pattern one letter short of the model's layers (pp 2: chunk length is L/2); used as given or refused")
    a(f"rc-{p}-layers-L-letters-pp2", "estimate", *pa, "--recompute", "layers:" + "K" * (NL[p] // 2) + "C" * (NL[p] - NL[p] // 2), "--json", out="json",
      group=GRC, fn=(lambda pa=pa, p=p: (lambda rc, out, es, d, ans: (["numbers identical to --recompute none: the pattern's C letters (layers %d..%d) are silently ignored" % (NL[p]//2+1, NL[p])] if rc == 0 and not same_numbers([A, "estimate", *pa, "--recompute", "none", "--json"])(rc, out, es, d, ans) else [])))(),
      note="L letters, second half C: must be used or refused")
    a(f"rc-{p}-layers-mixed", "timeline", *pa, "--recompute", "layers:" + ("SCRX" * 20)[:NL[p]], "--csv", expect=ANY, group=GRC, fn=csv_ok)
    a(f"rc-{p}-custom-ln1", "estimate", *pa, "--recompute", "custom", "--custom-keep", "ln1.in,mlp.fc1_in", "--json", out="json", expect=(ANY if p == "qwen3-30b-a3b" else OK), group=GRC,
      note="round 5 runner fix: the MoE layer has no mlp.fc1_in record")
    a(f"rc-{p}-offload-full", "estimate", *pa, "--recompute", "full", "--offload", "--json", out="json", expect=OK, group=GRC,
      differs=[A, "estimate", *pa, "--recompute", "full", "--json"])
a("rc-phi3-custom-qnorm", "estimate", "--preset", "phi-3-mini-4k", "--recompute", "custom", "--custom-keep", "attn.q_norm.in", expect=R, group=GRC,
  note="phi3 has no q_norm record")
a("rc-qwen3-custom-postnorm", "estimate", "--preset", "qwen3-8b", "--recompute", "custom", "--custom-keep", "attn.post_norm.in", expect=R, group=GRC,
  note="qwen3 has no sandwich norm")
a("rc-gemma2-custom-postnorm", "estimate", "--preset", "gemma-2-9b-it", "--recompute", "custom", "--custom-keep", "attn.post_norm.in", "--json", out="json", expect=ANY, group=GRC)
a("rc-gemma3-custom-dup", "estimate", "--preset", "gemma-3-1b-it", "--recompute", "custom", "--custom-keep", "ln1.in,ln1.in", expect=ANY, group=GRC)
a("rc-vpp-layers-pattern", "estimate", "--preset", "qwen3-8b", "--pp", "2", "--vpp", "2", "--grad-accum", "4", "--recompute", "layers:" + "KS" * 18, "--json", out="json", expect=ANY, group=GRC)

# ------------------------------------------------------------- odd JSON numbers in every key family
GN = "odd_numbers"
q3 = {"model_type": "qwen3", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128}
q3m = dict(q3, model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
wj("q3.json", q3); wj("q3m.json", q3m)
def raw_with(base, key, tok):
    o = {k: v for k, v in base.items() if k != key}
    return json.dumps(o)[:-1] + f', "{key}": {tok}}}'
FORMS = [("dot0", lambda n: f"{n}.0", "same"), ("e0", lambda n: f"{n}e0", "same"), ("Eplus", lambda n: f"{n/10:g}E+1", "same"),
         ("neg0", lambda n: "-0", R), ("1e400", lambda n: "1e400", R), ("m1e400", lambda n: "-1e400", R), ("1em400", lambda n: "1e-400", R),
         ("2p64p1", lambda n: "18446744073709551617", R), ("half", lambda n: f"{n}.5", R)]
for fam, base, keys in [("q3", q3, ["hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers",
                                      "intermediate_size", "vocab_size", "max_position_embeddings"]),
                        ("q3m", q3m, ["num_experts", "num_experts_per_tok", "moe_intermediate_size"])]:
    for key in keys:
        for tag, fn_, e in FORMS:
            if fam == "q3m" and tag not in ("dot0", "Eplus", "neg0", "1e400"): continue
            if key == "max_position_embeddings" and tag in ("2p64p1",): continue
            w(f"n_{fam}_{key}_{tag}.json", raw_with(base, key, fn_(base[key])))
            a(f"num-{fam}-{key}-{tag}", *EST(f"n_{fam}_{key}_{tag}.json"), expect=(ANY if e == "same" else R), out="json", group=GN,
              same=([A, *EST(f"{fam}.json")] if e == "same" else None), fn=(msg_has(key) if e == R else None))
# float-valued keys: phi3 pdrops, gemma softcap, attention_dropout
p3 = {"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100,
      "max_position_embeddings": 128, "resid_pdrop": 0.1, "embd_pdrop": 0.1}
wj("p3.json", p3)
for tag, r_, e_, exp in [("exp-form", "1e-1", "0.1", "same"), ("neg0-both", "-0", "-0.0", ANY), ("1em400-both", "1e-400", "1e-400", ANY),
                         ("1e400", "1e400", "1e400", R), ("resid-1E-1-embd-0.10", "1E-1", "0.10", "same")]:
    o = {k: v for k, v in p3.items() if k not in ("resid_pdrop", "embd_pdrop")}
    w(f"n_p3_{tag}.json", json.dumps(o)[:-1] + f', "resid_pdrop": {r_}, "embd_pdrop": {e_}}}')
    a(f"num-p3-pdrop-{tag}", *EST(f"n_p3_{tag}.json"), expect=(ANY if exp == "same" else exp), out="json", group=GN,
      same=([A, *EST("p3.json")] if exp == "same" else None), fn=(msg_has("pdrop") if exp == R else None))
g2 = {"model_type": "gemma2", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2,
      "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}
wj("g2.json", g2)
for tag, tok, exp in [("5e1", "5e1", "same"), ("500e-1", "500e-1", "same"), ("m1e400", "-1e400", R), ("1e-320", "1e-320", ANY)]:
    w(f"n_g2_attn_{tag}.json", raw_with(g2, "attn_logit_softcapping", tok))
    a(f"num-g2-attn-softcap-{tag}", *EST(f"n_g2_attn_{tag}.json"), expect=(ANY if exp == "same" else exp), out="json", group=GN,
      same=([A, *EST("g2.json")] if exp == "same" else None), fn=(msg_has("attn_logit_softcapping") if exp == R else None))
for tag, tok, exp in [("1e400", "1e400", R), ("neg0", "-0", ANY), ("exp", "0e5", ANY)]:
    w(f"n_q3_attdrop_{tag}.json", raw_with(q3, "attention_dropout", tok))
    a(f"num-q3-attention-dropout-{tag}", *EST(f"n_q3_attdrop_{tag}.json"), expect=exp, out="json", group=GN,
      fn=(msg_has("attention_dropout") if exp == R else None), same=([A, *EST("q3.json")] if exp == ANY else None))
# layer_stack repeat and layer kind values in odd forms (our schema)
ours = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128}
wj("ours.json", ours)
for tag, tok, exp in [("repeat-2.0", "2.0", ANY), ("repeat-1e400", "1e400", R), ("repeat-neg0", "-0", R), ("repeat-2e0", "2e0", ANY)]:
    w(f"n_stack_{tag}.json", json.dumps(dict(ours, layer_kinds={"k": {"intermediate_size": 128}}))[:-1] + f', "layer_stack": [{{"kind": "k", "repeat": {tok}}}]}}')
    a(f"num-stack-{tag}", *EST(f"n_stack_{tag}.json"), expect=exp, out="json", group=GN, fn=(msg_has("repeat") if exp == R else None))
for tag, tok in [("kind-inter-1e400", "1e400"), ("kind-inter-neg0", "-0")]:
    w(f"n_{tag}.json", json.dumps(ours)[:-1] + f', "layer_kinds": {{"k": {{"intermediate_size": {tok}}}}}, "layer_stack": ["base", "k"]}}')
    a(f"num-{tag}", *EST(f"n_{tag}.json"), expect=R, out="json", group=GN, fn=msg_has("intermediate_size"))
# config keys through requests: each form on one line; canonical first
CK = [("seq", 16, True), ("micro_batch", 2, True), ("tp", 2, True), ("pp", 2, True), ("dp", 2, True), ("zero", 1, False), ("grad_accum", 2, True),
      ("gpu_memory_bytes", 85899345920, True), ("cublas_workspace_bytes", 1048576, False), ("dropout", 0.1, False), ("vpp", 1, True), ("cp", 2, True)]
for key, n, positive in CK:
    forms = [str(n), (f"{n}.0" if isinstance(n, int) else "1e-1"), f"{n}e0", "-0", "1e400", "-1e400", "1e-400", "18446744073709551617", "0"]
    exp = ["ok", "*", "*", ("err" if positive else "*"), "err", "err", ("err" if positive else "*"), "err", ("err" if positive else "*")]
    extra = ',"dp":2' if key == "zero" else ""
    ls = ['{"command":"estimate","preset":"qwen3-8b","config":{"seq":64%s,"%s":%s}}' % (extra, key, t) if key != "seq" else
          '{"command":"estimate","preset":"qwen3-8b","config":{"%s":%s}}' % (key, t) for t in forms]
    lines(f"n_req_{key}.txt", *ls)
    def chk(key=key, positive=positive):
        def f_(rc, out, es, d, ans):
            r = []
            for i in (1, 2) + (() if positive else (3, 6)):
                j0 = 0 if i in (1, 2) else 8
                if len(ans) > i and ans[i].get("ok") and ans[j0].get("ok"):
                    x = dict(ans[i]); y = dict(ans[j0])
                    if x.get("peak_bytes") != y.get("peak_bytes") or x.get("config") != y.get("config"):
                        r.append(f"line {i} accepted but differs from the canonical line")
            for i in (4, 5, 7):
                if len(ans) > i and not ans[i].get("ok") and key not in ans[i].get("error", {}).get("message", ""):
                    r.append(f"line {i} message lacks {key!r}: {ans[i]['error'].get('message','')[:100]!r}")
            return r
        return f_
    req(f"num-config-{key}", f"n_req_{key}.txt", exp, group=GN, fn=chk())
w("n_cfg_seq_1e400.json", '{"seq": 1e400}')
a("num-cli-config-seq-1e400", "estimate", "--preset", "qwen3-8b", "--config", D + "n_cfg_seq_1e400.json", expect=R, group=GN, fn=msg_has("seq"))
w("n_cfg_tp_2.0.json", '{"tp": 2.0, "seq": 6.4e1}')
a("num-cli-config-tp-2.0", "estimate", "--preset", "qwen3-8b", "--config", D + "n_cfg_tp_2.0.json", "--json", out="json", group=GN,
  same=[A, "estimate", "--preset", "qwen3-8b", "--tp", "2", "--seq", "64", "--json"])

# ------------------------------------------------------------- model_text error classes
GT = "model_text"
Q3T = json.dumps(q3)
def mt(cid, text, exp, fn=None, extra=None, note=""):
    d = {"command": "estimate", "model_text": text, "config": {"seq": 16}}
    if extra: d.update(extra)
    lines(f"t_{cid}.txt", d)
    req(f"mt-{cid}", f"t_{cid}.txt", [exp], group=GT, fn=fn, note=note)
mt("valid", Q3T, "ok")
lines("t_valid_vs_model.txt", {"command": "estimate", "model_text": Q3T, "config": {"seq": 16}}, {"command": "estimate", "model": q3, "config": {"seq": 16}})
req("mt-valid-equals-model", "t_valid_vs_model.txt", ["ok", "ok"], group=GT, fn=ans_equal(0, 1))
mt("syntax-double-comma", Q3T[:-1] + ",,}", "err", fn=msg_has("byte", 0))
mt("syntax-trailing-garbage", Q3T + " x", "err", fn=msg_has("byte", 0))
mt("syntax-comment", Q3T[:-1] + ', /* c */ "x_u": 1}', "err")
mt("syntax-unterminated", Q3T[:-2], "err", fn=msg_has("byte", 0))
mt("duplicate-key", Q3T[:-1] + ', "hidden_size": 64}', "err", fn=msg_has("hidden_size", 0))
mt("duplicate-key-esc", Q3T[:-1] + ', "x\\u001b[2J": 1, "x\\u001b[2J": 2}', "err")
mt("nul-in-string", Q3T[:-1] + ', "x_u": "a\\u0000b"}', "*", note="an escaped NUL is not a NUL byte (schema.md); round 5 runner fix")
mt("raw-nul", Q3T[:-1] + ', "x_u": "a\u0000b"}', "err")
mt("depth-65", Q3T[:-1] + ', "x_u": ' + "[" * 65 + "]" * 65 + "}", "err", fn=msg_has("deep", 0))
mt("depth-63", Q3T[:-1] + ', "x_u": ' + "[" * 62 + "]" * 62 + "}", "ok")
mt("too-many-values", Q3T[:-1] + ', "x_u": [' + ",".join(["0"] * 262150) + "]}", "err")
mt("nan-hidden", raw_with(q3, "hidden_size", "NaN"), "err", fn=msg_has("hidden_size", 0))
mt("unknown-model-type", json.dumps(dict(q3, model_type="bert\u001b[31m")), "err", fn=msg_has("model_type", 0))
mt("strict-unknown-key", json.dumps(dict(ours, foo_bar=1)), "err", fn=msg_has("foo_bar", 0))
mt("array", "[]", "err"); mt("string-top", '"x"', "err"); mt("empty", "", "err"); mt("ws-only", " \n\t ", "err")
mt("number-not-string", 5, "err", fn=msg_has("model_text", 0))
mt("null", None, "*")
mt("with-model", Q3T, "err", extra={"model": q3})
mt("with-preset", Q3T, "err", extra={"preset": "qwen3-8b"})
mt("with-example", Q3T, "err", extra={"example": "seed000-flash-7b"})
mt("bom", "\ufeff" + Q3T, "*")
mt("1e400-head-dim", raw_with(q3, "head_dim", "1e400"), "err", fn=msg_has("head_dim", 0))
mt("lone-surrogate-name", json.dumps(dict(ours, metadata={"name": "x"}))[:-2] + '\\ud800\\u009b\\u001b"}}', "*")
mt("g2-no-kv", json.dumps({k: v for k, v in g2.items() if k != "num_key_value_heads"}), "err", fn=msg_has("num_key_value_heads", 0))
mt("g3-act-relu", json.dumps(dict(g2, model_type="gemma3_text", attn_logit_softcapping=None, final_logit_softcapping=None, hidden_activation="relu")), "err",
   fn=msg_has("hidden_activation", 0))
mt("q3m-1e400-in-kind", json.dumps(q3m)[:-1] + ', "layer_kinds": {"k": {"moe_intermediate_size": 1e400}}, "layer_stack": ["base", "k"]}', "err")
mt("byte-of-error-in-long", Q3T[:-1] + ', "x_u": "' + "a" * 200 + '" "b"}', "err", fn=msg_has("byte", 0))
mt("gemma-norm-layernorm", json.dumps(dict(ours, gemma_norm=True, norm_type="layernorm")), "err", fn=msg_has("gemma_norm", 0))
mt("gpt2-hidden-activation", json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 128,
                                         "hidden_activation": "gelu"}), "err", fn=msg_has("hidden_activation", 0))
mt("gpt2-act-relu", json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 128,
                                "activation_function": "relu"}), "ok")
mt("llama-act-relu", json.dumps(dict(ours, model_type="llama", hidden_act="relu")), "err", fn=msg_has("hidden_act", 0))
for act in ["swish", "gelu_new", "gelu_fast", "gelu_python", "gelu_accurate"]:
    mt(f"act-{act}", json.dumps(dict(ours, model_type="llama", hidden_act=act)), "ok")
for act in ["quick_gelu", "gelu_10", "SiLU", "silu "]:
    mt(f"act-rej-{act.strip().replace(' ', '_')}", json.dumps(dict(ours, model_type="qwen3", hidden_act=act)), "err", fn=msg_has("hidden_act", 0))

# ------------------------------------------------------------- control characters in keys / names reaching text output
GC = "ctrl_names"
K = "k\u001b[2J\u0085\u007f\u009b"
ck = dict(ours, layer_kinds={K: {"intermediate_size": 256}}, layer_stack=["base", K], metadata={"name": "N\u001b]0;pwn\u0007,\"q\"\nX\u009b"})
wj("c_kind.json", ck)
for cmd, extra in [("estimate", []), ("estimate", ["--json"]), ("explain", []), ("timeline", ["--csv"]), ("timeline", []), ("timeline", ["--json"]),
                   ("fit", ["--gpu", "h100-80gb"]), ("plan", ["--gpu", "h100-80gb"]), ("sweep", ["--sweep-micro-batches", "1", "--sweep-seqs", "16"]),
                   ("estimate", ["--pp", "2"])]:
    a(f"ctl-kind-{cmd}{''.join(extra).replace('-', '_')[:20]}", cmd, "--model", D + "c_kind.json", *([] if cmd in ("fit", "plan", "sweep") else ["--seq", "16"]), *extra,
      expect=OK, out=("json" if "--json" in extra else None), group=GC, fn=(csv_ok if "--csv" in extra else None))
hk = dict(q3, **{"x\u001b[31m\u0085\u007f": 1, "y\u009b\ttab": "NaN"})
wj("c_hf_keys.json", hk)
for cmd, extra in [("estimate", []), ("estimate", ["--json"]), ("explain", []), ("timeline", ["--csv"])]:
    a(f"ctl-hfkey-{cmd}{''.join(extra).replace('-', '_')}", cmd, "--model", D + "c_hf_keys.json", "--seq", "16", *extra, expect=OK,
      out=("json" if "--json" in extra else None), group=GC, fn=warn_has("x") if "--json" in extra else None)
wj("c_strict_key.json", dict(ours, **{"foo\u001b[2J\u0085": 1}))
a("ctl-strict-key", "estimate", "--model", D + "c_strict_key.json", expect=R, group=GC)
wj("c_kind_key.json", dict(ours, layer_kinds={"k": {"interm\u001b[31mediate_size": 256}}, layer_stack=["base", "k"]))
a("ctl-kind-unknown-key", "estimate", "--model", D + "c_kind_key.json", expect=R, group=GC, fn=msg_has("layer_kinds"))
wj("c_stack_unknown_kind.json", dict(ours, layer_kinds={"k": {"intermediate_size": 256}}, layer_stack=["base", "k\u0085\u001b"]))
a("ctl-stack-unknown-kind", "estimate", "--model", D + "c_stack_unknown_kind.json", expect=R, group=GC)
wj("c_long_kind.json", dict(ours, layer_kinds={"k" * 3000: {"intermediate_size": 256}}, layer_stack=["base", "k" * 3000]))
a("ctl-long-kind-name-explain", "explain", "--model", D + "c_long_kind.json", "--seq", "16", expect=ANY, group=GC)
wj("c_dup_ctl.json", {})
w("c_dup_ctl.json", json.dumps(ours)[:-1] + ', "\\u001b[2Jx": 1, "\\u001b[2Jx": 2}')
a("ctl-dup-key", "estimate", "--model", D + "c_dup_ctl.json", expect=R, group=GC, fn=msg_has("twice"))
w("c_key_nul.json", json.dumps(ours)[:-1] + ', "a\\u0000b": 1}')
a("ctl-key-nul-escape", "estimate", "--model", D + "c_key_nul.json", expect=R, group=GC)
lines("c_req_keys.txt", {"command": "estimate", "preset": "qwen3-8b", "config": {"se\u001bq": 16}},
      {"command": "estimate\u0085", "preset": "qwen3-8b"}, {"command": "estimate", "preset": "qwen3-8b\u009b"},
      {"command": "estimate", "model": hk, "config": {"seq": 16}}, {"command": "view", "model": ck, "config": {"seq": 16}},
      {"command": "estimate", "preset": "qwen3-8b", "config": {"gpu": "h100\u001b"}}, {"command": "estimate", "preset": "qwen3-8b", "config": {"recompute": "layers:K\u0085"}},
      {"command": "estimate", "preset": "qwen3-8b", "config": {"custom_keep": ["ln1.in\u001b"], "recompute": "custom"}})
req("ctl-request-keys", "c_req_keys.txt", ["err", "err", "err", "ok", "ok", "err", "err", "err"], group=GC)
a("ctl-custom-keep-c1", "estimate", "--preset", "gemma-3-1b-it", "--recompute", "custom", "--custom-keep", "ln1.in\u0085\u001b[2J", expect=R, group=GC)
a("ctl-recompute-c1", "estimate", "--preset", "phi-3-mini-4k", "--recompute", "every:2\u009b", expect=R, group=GC)
a("ctl-layer-split-c1", "estimate", "--preset", "qwen3-8b", "--pp", "2", "--layer-split", "18,18\u0085", expect=R, group=GC)
a("ctl-sweep-seqs-esc", "sweep", "--preset", "qwen3-8b", "--sweep-seqs", "512,\u001b[2J", expect=R, group=GC)

# ------------------------------------------------------------- actmem-validate (tiny configs, predicted well under 120 s)
GV = "validator"
VB = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 64, "max_position_embeddings": 128}
vfam = {"llama": dict(VB, model_type="llama", num_key_value_heads=2), "phi3": dict(VB, model_type="phi3"),
        "qwen3": dict(VB, model_type="qwen3", num_key_value_heads=2, head_dim=16),
        "qwen3_moe": dict(VB, model_type="qwen3_moe", num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
        "gemma2": dict(VB, model_type="gemma2", num_key_value_heads=2, head_dim=16),
        "gemma3": dict(VB, model_type="gemma3_text", num_key_value_heads=2, head_dim=16),
        "gpt2": {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 64, "n_positions": 128}}
for fam, o in vfam.items():
    wj(f"v_{fam}.json", o)
for fam in ["llama", "phi3", "qwen3", "qwen3_moe", "gpt2"]:
    for rc_ in ["none", "selective", "full"]:
        v(f"v-{fam}-{rc_}", "--model", D + f"v_{fam}.json", "--seq", "16", "--recompute", rc_, "--json", out="json", group=GV, tmo=130,
          fn=lambda rc, out, es, d, ans: (["exit 1 on a tiny model: " + out[:300].decode("utf-8", "replace")] if rc == 1 else []))
for fam in ["gemma2", "gemma3"]:
    v(f"v-{fam}-refused", "--model", D + f"v_{fam}.json", "--seq", "16", expect=R, group=GV, tmo=130)
v("v-phi3-every1", "--model", D + "v_phi3.json", "--seq", "16", "--recompute", "every:1", group=GV, tmo=130)
v("v-phi3-layers-KC", "--model", D + "v_phi3.json", "--seq", "16", "--recompute", "layers:KC", group=GV, tmo=130)
v("v-qwen3moe-ep2", "--model", D + "v_qwen3_moe.json", "--seq", "16", "--ep", "2", "--dp", "2", group=GV, tmo=130)
v("v-phi3-tp2", "--model", D + "v_phi3.json", "--seq", "16", "--tp", "2", group=GV, tmo=130)
v("v-phi3-offload", "--model", D + "v_phi3.json", "--seq", "16", "--offload", group=GV, tmo=130)
v("v-preset-qwen3-8b", "--preset", "qwen3-8b", "--seq", "16", expect=R, group=GV, tmo=130, note="work bound")
v("v-phi3-seq-1e400-config", "--model", D + "v_phi3.json", "--config", D + "n_cfg_seq_1e400.json", expect=R, group=GV, fn=msg_has("seq"))
v("v-phi3-ctl-kind", "--model", D + "c_kind.json", "--seq", "16", group=GV, tmo=130)
v("v-hidden-act-1e400", "--model", D + "n_q3_head_dim_1e400.json", "--seq", "16", expect=R, group=GV, fn=msg_has("head_dim"))
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
        tf = "/tmp/hostile6/time5.out"
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
