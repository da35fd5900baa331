import json, os, subprocess, sys, time, re
BIN = "/tmp/hostile9/bin/actmem"
D = "/tmp/hostile9"
os.makedirs(D + "/in", exist_ok=True)
NH = '{"model_type":"nemotron_h","hidden_size":256,"intermediate_size":512,"num_hidden_layers":4,"hybrid_override_pattern":"M-M*","num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"mamba_num_heads":8,"mamba_head_dim":32,"ssm_state_size":16,"n_groups":2,"conv_kernel":4,"chunk_size":32,"vocab_size":1024}'
M2 = '{"model_type":"mamba2","hidden_size":256,"num_hidden_layers":2,"num_heads":8,"head_dim":64,"state_size":16,"n_groups":2,"conv_kernel":4,"chunk_size":32,"expand":2,"vocab_size":1024}'
cases = []
def case(name, text, args, note=""):
    cases.append((name, text, args, note))
def setkey(base, key, raw):
    """replace or add key with raw JSON text value"""
    obj = json.loads(base)
    if key in obj:
        # regex replace the value text
        pat = re.compile(r'("%s":)([^,}]*|"[^"]*")' % re.escape(key))
        s = pat.sub(lambda m: m.group(1) + raw, base, count=1)
        return s
    return base[:-1] + ',"%s":%s}' % (key, raw)
def delkey(base, key):
    obj = json.loads(base); obj.pop(key)
    return json.dumps(obj, separators=(",", ":"))

BIG = {"0":"0","1":"1","neg1":"-1","p40":str(2**40),"p40p1":str(2**40+1),"p63":str(2**63),"p64":str(2**64),
       "f4_5":"4.5","f1e300":"1e300","NaN":"NaN","Inf":"Infinity","mInf":"-Infinity","str8":'"8"',
       "null":"null","arr":"[8]","obj":'{"a":1}',"true":"true","f8_0":"8.0"}
NHK = ["hidden_size","num_hidden_layers","vocab_size","mamba_num_heads","mamba_head_dim","ssm_state_size",
       "n_groups","conv_kernel","chunk_size","intermediate_size","num_attention_heads","num_key_value_heads",
       "head_dim","attention_head_dim"]
M2K = ["hidden_size","num_hidden_layers","vocab_size","num_heads","head_dim","state_size","n_groups",
       "conv_kernel","chunk_size","expand"]
SEQ = ["--seq","64","--profile","pytorch"]
for k in NHK:
    for vn, v in BIG.items():
        case(f"nh_{k}_{vn}", setkey(NH, k, v), SEQ)
for k in M2K:
    for vn, v in BIG.items():
        case(f"m2_{k}_{vn}", setkey(M2, k, v), SEQ)
# bool keys
for fam, base, keys in [("nh", NH, ["use_conv_bias","use_bias","attention_bias","mlp_bias","tie_word_embeddings"]),
                        ("m2", M2, ["use_conv_bias","use_bias","tie_word_embeddings","residual_in_fp32"])]:
    for k in keys:
        for vn, v in [("strtrue",'"true"'),("one","1"),("null","null"),("NaN","NaN"),("false","false")]:
            case(f"{fam}_bool_{k}_{vn}", setkey(base, k, v), SEQ)
# activations
for fam, base, keys in [("nh", NH, ["mamba_hidden_act","mlp_hidden_act"]), ("m2", M2, ["hidden_act"])]:
    for k in keys:
        for vn, v in [("silu",'"silu"'),("swish",'"swish"'),("relu2",'"relu2"'),("gelu",'"gelu"'),("empty",'""'),
                      ("null","null"),("NaN","NaN"),("ctl",'"\\u001b[31mred"')]:
            case(f"{fam}_act_{k}_{vn}", setkey(base, k, v), SEQ)
# dropout / sliding window (nemotron)
for k in ["attention_dropout","hidden_dropout"]:
    for vn, v in [("0","0"),("0f","0.0"),("0_1","0.1"),("neg","-0.1"),("NaN","NaN"),("Inf","Infinity"),("str",'"0"'),("null","null"),("negzero","-0.0"),("tiny","1e-320")]:
        case(f"nh_{k}_{vn}", setkey(NH, k, v), SEQ)
for vn, v in [("null","null"),("0","0"),("4096","4096"),("NaN","NaN"),("str",'"none"'),("false","false")]:
    case(f"nh_sliding_window_{vn}", setkey(NH, "sliding_window", v), SEQ)
# hybrid_override_pattern
pats = {"E":'"M-E*"', "lower_m":'"m-M*"', "unicode":'"M-\u00e9*"', "unicode_raw":'"M-é*"', "nul":'"M-\\u0000*"', "empty":'""',
        "long10k":'"' + "M"*10000 + '"', "short":'"M-M"', "longer":'"M-M**"', "space":'"M-M "', "allM":'"MMMM"',
        "allstar":'"****"', "alldash":'"----"', "nl":'"M-\\nM"', "num":'1234', "arr":'["M","-","M","*"]', "null":'null',
        "NaN":'NaN', "obj":'{"p":"M-M*"}', "emoji":'"M-\\ud83d\\ude00"', "loneSurr":'"M-\\ud800*"', "bs":'"M-\\\\*"', "tab":'"M-\\t*"',
        "esc":'"M\\u001b[2J-M*"', "star_only_dash":'"*-*-"', "DEL":'"M-\\u007f*"', "C1":'"M-\\u0085*"'}
for pn, p in pats.items():
    case(f"nh_pat_{pn}", setkey(NH, "hybrid_override_pattern", p), SEQ)
# pattern with layers 10000 and 65537
case("nh_pat_10k_layers", setkey(setkey(NH,"num_hidden_layers","10000"),"hybrid_override_pattern",'"'+"M-*"*3333+'M"'), ["--seq","64"])
case("nh_pat_65536_layers", setkey(setkey(NH,"num_hidden_layers","65536"),"hybrid_override_pattern",'"'+"M"*65536+'"'), ["--seq","64"])
case("nh_pat_65537_layers", setkey(setkey(NH,"num_hidden_layers","65537"),"hybrid_override_pattern",'"'+"M"*65537+'"'), ["--seq","64"])
case("nh_pat_65537_layers_short", setkey(NH,"num_hidden_layers","65537"), ["--seq","64"])
case("nh_pat_missing", delkey(NH,"hybrid_override_pattern"), SEQ)
case("nh_pat_E_pos0", setkey(NH, "hybrid_override_pattern", '"EMM*"'), SEQ)
case("nh_pat_mismatch_long_bad", setkey(NH, "hybrid_override_pattern", '"XXXXXXXX"'), SEQ)
# head_dim vs attention_head_dim
for vn, (hd, ahd) in {"same":("64","64"),"conflict":("64","32"),"int_float":("64","64.0"),"str_int":('"64"',"64"),
                      "null_ahd":("null","32"),"ahd_only":(None,"32"),"hd_null_ahd_null":("null","null"),
                      "ahd_bad":("64",'"x"'),"both_zero":("0","0"),"hd_null_ahd_str":("null",'"32"'),
                      "big_conflict":(str(2**63),str(2**63+1)),"neg":("-64","-64")}.items():
    t = NH if hd is not None else delkey(NH, "head_dim")
    if hd is not None: t = setkey(t, "head_dim", hd)
    t = setkey(t, "attention_head_dim", ahd)
    case(f"nh_hd_ahd_{vn}", t, SEQ)
# keys of the other family / foreign
for k, v in [("num_heads","8"),("state_size","16"),("hidden_act",'"silu"'),("expand","2"),("expand","3"),("residual_in_fp32","true"),
             ("residual_in_fp32","false"),("mamba_n_groups","2"),("mamba_d_conv","4"),("mamba_chunk_size","32"),("mamba_d_state","16"),
             ("layer_kinds","{}"),("layer_stack","[]"),("ffn_type",'"relu2"'),("num_local_experts","8"),("num_experts_per_tok","2"),
             ("n_routed_experts","8"),("moe_intermediate_size","64"),("n_shared_experts","1"),("num_experts","8"),
             ("layers_block_type",'["mamba","mlp","mamba","attention"]'),("mtp_hybrid_override_pattern",'"*E"'),
             ("rope_theta","10000"),("rope_scaling",'{"type":"linear","factor":2}'),("position_embedding",'"rope"'),
             ("norm_type",'"layernorm"'),("time_step_limit",'[0.0, Infinity]'),("time_step_limit",'[NaN, -Infinity]'),
             ("mamba_proj_bias","true"),("use_mamba_kernels","false"),("num_logits_to_keep","1"),("quantization_config",'{"quant_method":"fp8"}'),
             ("attn_implementation",'"flash_attention_2"'),("_attn_implementation",'"eager"'),("norm_eps","1e-5"),
             ("block_layout",'"parallel"'),("qk_norm","true"),("output_router_logits","true"),("max_position_embeddings","8"),
             ("partial_rotary_factor","0.5"),("n_embd","256"),("layer_norm_epsilon","NaN"),("rescale_prenorm_residual","Infinity")]:
    case(f"nh_foreign_{k}_{v[:6]}", setkey(NH, k, v), SEQ)
for k, v in [("mamba_num_heads","8"),("ssm_state_size","16"),("mamba_head_dim","64"),("mamba_hidden_act",'"silu"'),
             ("hybrid_override_pattern",'"MM"'),("num_attention_heads","4"),("num_key_value_heads","2"),("intermediate_size","512"),
             ("intermediate_size","999"),("attention_head_dim","64"),("attention_bias","true"),("mlp_bias","true"),("mlp_hidden_act",'"relu2"'),
             ("attention_dropout","0.1"),("hidden_dropout","0.1"),("sliding_window","4096"),("mamba_n_groups","2"),("mamba_d_conv","4"),
             ("mamba_chunk_size","32"),("mamba_d_state","16"),("layer_kinds","{}"),("norm_before_gate","false"),("rms_norm","false"),
             ("time_step_rank",'"auto"'),("time_step_limit",'[0.0, Infinity]'),("num_experts","8"),("rope_theta","1e4"),("dropout","0.1"),
             ("quantization_config",'{"quant_method":"gptq"}'),("d_model","256"),("n_layer","2"),("ssm_cfg",'{"layer":"Mamba2"}'),
             ("d_intermediate","0"),("pad_vocab_size_multiple","8"),("rms_norm_eps","1e-5"),("residual_dropout","0.1")]:
    case(f"m2_foreign_{k}_{v[:6]}", setkey(M2, k, v), SEQ)
# duplicate keys
case("nh_dup_heads", NH[:-1] + ',"mamba_num_heads":16}', SEQ)
case("nh_dup_pattern", NH[:-1] + ',"hybrid_override_pattern":"MMMM"}', SEQ)
case("m2_dup_samevalue", M2[:-1] + ',"state_size":16}', SEQ)
case("m2_dup_nested", M2[:-1] + ',"metadata":{"name":"a","name":"b"}}', SEQ)
case("nh_dup_model_type", NH[:-1] + ',"model_type":"mamba2"}', SEQ)
# model_type variants
for vn, v in [("Mamba2",'"Mamba2"'),("mamba",'"mamba"'),("nemotron-h",'"nemotron-h"'),("nemotronh",'"nemotronh"'),("nemotron",'"nemotron"'),
              ("mamba2_sp",'"mamba2 "'),("zamba2",'"zamba2"'),("jamba",'"jamba"'),("falcon_h1",'"falcon_h1"'),("bamba",'"bamba"'),("null","null"),("NaN","NaN")]:
    case(f"nh_model_type_{vn}", setkey(NH, "model_type", v), SEQ)
# mamba2 with nemotron's pattern-ish keys and vice versa whole model
case("m2_as_nh", setkey(M2, "model_type", '"nemotron_h"'), SEQ)
case("nh_as_m2", setkey(NH, "model_type", '"mamba2"'), SEQ)
# metadata name with control chars
case("nh_meta_ctl", setkey(NH, "metadata", '{"name":"\\u001b[2Jfits!\\nOK"}'), ["--seq","64"])
case("nh_meta_notobj", setkey(NH, "metadata", '"x"'), ["--seq","64"])
# chunk / seq interplay, all profiles & attention
for prof in ["megatron","pytorch","hf","textbook"]:
    for att in ["eager","flash"]:
        for seq in ["1","31","32","33","100","4096"]:
            case(f"nh_prof_{prof}_{att}_s{seq}", NH, ["--seq",seq,"--profile",prof,"--attention",att])
        case(f"m2_prof_{prof}_{att}", M2, ["--seq","100","--profile",prof,"--attention",att])
for cs in ["1","2","3", str(2**20), str(2**30), str(2**40)]:
    for prof in ["pytorch","megatron","hf"]:
        case(f"nh_chunk{cs}_{prof}", setkey(NH,"chunk_size",cs), ["--seq","64","--profile",prof])
    case(f"nh_chunk{cs}_pt_seq2p30", setkey(NH,"chunk_size",cs), ["--seq",str(2**30),"--profile","pytorch"])
for K in ["1","2",str(2**20),str(2**40)]:
    for prof in ["pytorch","megatron"]:
        case(f"nh_conv{K}_{prof}", setkey(NH,"conv_kernel",K), ["--seq","64","--profile",prof])
    case(f"m2_conv{K}_pt_s2p30", setkey(M2,"conv_kernel",K), ["--seq",str(2**30),"--profile","pytorch"])
# n_groups not dividing heads
for g in ["3","5","16","7"]:
    case(f"nh_groups{g}", setkey(NH,"n_groups",g), SEQ)
    case(f"m2_groups{g}", setkey(M2,"n_groups",g), SEQ)
# overflow products
def nhset(**kw):
    t = NH
    for k, v in kw.items(): t = setkey(t, k, str(v))
    return t
def m2set(**kw):
    t = M2
    for k, v in kw.items(): t = setkey(t, k, str(v))
    return t
over = {
 "heads40_hd40": nhset(mamba_num_heads=2**40, mamba_head_dim=2**40),
 "heads20_hd20": nhset(mamba_num_heads=2**20, mamba_head_dim=2**20, n_groups=1),
 "heads20_hd21": nhset(mamba_num_heads=2**20, mamba_head_dim=2**21, n_groups=1),
 "state40_groups2": nhset(ssm_state_size=2**40),
 "state39_groups2": nhset(ssm_state_size=2**39),
 "state20_g20": nhset(ssm_state_size=2**20, n_groups=2**20, mamba_num_heads=2**20),
 "heads40_hd1": nhset(mamba_num_heads=2**40, mamba_head_dim=1, n_groups=1),
 "hidden40": nhset(hidden_size=2**40),
 "vocab40": nhset(vocab_size=2**40),
 "ffn40": nhset(intermediate_size=2**40),
 "hidden40_ffn40": nhset(hidden_size=2**40, intermediate_size=2**40),
 "attn_heads40": nhset(num_attention_heads=2**40, num_key_value_heads=2**40),
 "attn_hd40": nhset(head_dim=2**40),
 "h30_heads16_hd2p26": nhset(hidden_size=2**30, mamba_num_heads=16, mamba_head_dim=2**26),
}
for n, t in over.items():
    for prof in ["pytorch","megatron"]:
        case(f"nh_over_{n}_{prof}", t, ["--seq","64","--profile",prof])
    case(f"nh_over_{n}_pt_s4096_b64", t, ["--seq","4096","--micro-batch","64","--profile","pytorch"])
m2over = {
 "h2p40_heads2p21_hd2p20": m2set(hidden_size=2**40, num_heads=2**21, head_dim=2**20, n_groups=1),
 "h2p39_exp2_heads2p20_hd2p20": m2set(hidden_size=2**39, num_heads=2**20, head_dim=2**20, n_groups=1),
 "expand2p40": m2set(expand=2**40),
 "expand2p40_h2p40": m2set(expand=2**40, hidden_size=2**40),
 "expand_float": m2set(expand="2.0"),
 "expand_1_5": m2set(expand="1.5", num_heads=6),
 "expand1_heads4": m2set(expand=1, num_heads=4),
 "heads_hd_mismatch": m2set(num_heads=16),
 "state2p40": m2set(state_size=2**40, n_groups=1),
 "state2p40_g2": m2set(state_size=2**40),
}
for n, t in m2over.items():
    for prof in ["pytorch","megatron"]:
        case(f"m2_over_{n}_{prof}", t, ["--seq","64","--profile",prof])
# parallelism
par = [
 ["--tp","2"],["--tp","4"],["--tp","8"],["--tp","16"],["--tp","2","--sp"],["--tp","4","--sp"],
 ["--pp","2"],["--pp","4"],["--pp","5"],["--pp","3"],["--pp","2","--vpp","2"],["--pp","2","--vpp","3"],["--pp","1","--vpp","2"],
 ["--cp","2"],["--cp","1"],["--dp","8","--zero","3"],["--layer-split","3,1","--pp","2"],["--layer-split","4,0","--pp","2"],
 ["--layer-split","1,3","--pp","2"],["--layer-split","2,2,0","--pp","3"],["--ep","2"],["--tp","2","--pp","2","--dp","2","--zero","1","--sp"],
 ["--pp","4","--schedule","interleaved"],["--pp","2","--vpp","2","--schedule","interleaved"],["--pp","2","--schedule","gpipe","--micro-batches","8"],
]
for i, p in enumerate(par):
    case(f"nh_par{i}_" + "_".join(x.strip("-") for x in p), NH, ["--seq","64","--profile","pytorch"] + p)
    case(f"nh_par{i}_meg_" + "_".join(x.strip("-") for x in p), NH, ["--seq","64"] + p)
# tp divides heads but not groups
case("nh_tp_heads_not_groups", nhset(mamba_num_heads=8, n_groups=2), ["--seq","64","--tp","4"])
case("nh_tp_groups1_tp2", nhset(n_groups=1), ["--seq","64","--tp","2"])
case("nh_tp_attn_heads3", nhset(num_attention_heads=3, num_key_value_heads=1), ["--seq","64","--tp","2"])
case("nh_tp_ffn_odd", nhset(intermediate_size=513), ["--seq","64","--tp","2"])
case("nh_tp_kv1_tp4", nhset(num_key_value_heads=1), ["--seq","64","--tp","4"])
case("m2_tp_groups2_tp4", M2, ["--seq","64","--tp","4"])
case("m2_tp_8", M2, ["--seq","64","--tp","8"])
case("m2_tp_vocab_odd", m2set(vocab_size=1023), ["--seq","64","--tp","2"])
case("m2_pp3_layers2", M2, ["--seq","64","--pp","3"])
case("m2_pp2", M2, ["--seq","64","--pp","2"])
case("m2_cp2_pt", M2, ["--seq","64","--cp","2","--profile","pytorch"])
# recompute
rec = ["none","selective","full","every:1","every:2","every:3","every:0","layers:K","layers:S","layers:C","layers:R","layers:X",
       "layers:KSCR","layers:KSCRK","layers:KSCRX","layers:","layers:M","custom","every:99999999999999999999"]
for r in rec:
    for prof in ["pytorch","megatron"]:
        case(f"nh_rec_{r.replace(':','_')}_{prof}", NH, ["--seq","64","--profile",prof,"--recompute",r])
case("nh_rec_custom_keep", NH, ["--seq","64","--profile","pytorch","--recompute","custom","--custom-keep","mamba.in_proj_out,mamba.L"])
case("nh_rec_custom_keep_bad", NH, ["--seq","64","--profile","pytorch","--recompute","custom","--custom-keep","mamba.nope"])
case("nh_rec_layers_pp2", NH, ["--seq","64","--pp","2","--recompute","layers:KS"])
case("nh_rec_layers_pp2_long", NH, ["--seq","64","--pp","2","--recompute","layers:KSC"])
case("nh_rec_offload", NH, ["--seq","64","--offload"])
# extreme seq/mb
for seq, mb in [(2**30,1),(2**30,2**20),(2**30,1024),(2**31,1),(2**40,1),(2**62,1),(2**63,1),(2**64,1),(10**7,10**4),(1,2**40),(3,5),(2**20,2**20),(2**24,64)]:
    for prof in ["pytorch","megatron","hf"]:
        case(f"nh_seq{seq}_mb{mb}_{prof}", NH, ["--seq",str(seq),"--micro-batch",str(mb),"--profile",prof])
    case(f"m2_seq{seq}_mb{mb}_pt", M2, ["--seq",str(seq),"--micro-batch",str(mb),"--profile","pytorch"])
# presets
for pr in ["nemotron-h-56b","mamba-codestral-7b"]:
    for a in [["--seq","8192"],["--seq","8192","--profile","pytorch"],["--seq","8192","--profile","hf","--attention","flash"],
              ["--seq","8192","--tp","8","--pp","4","--sp"],["--seq","8192","--tp","16"],["--seq","8192","--cp","2"],["--profile","textbook"],
              ["--seq","1048576","--profile","pytorch"],["--seq","1073741824","--micro-batch","1024","--profile","pytorch"],
              ["--seq","4096","--recompute","selective"],["--seq","4096","--recompute","full","--pp","2"],["--seq","4096","--json"],
              ["--seq","4096","--tp","3"],["--seq","4096","--pp","7"],["--seq","4096","--tp","8","--pp","2","--vpp","2"]]:
        case(f"preset_{pr}_" + "_".join(x.strip("-") for x in a), None, ["--preset",pr] + a)
# other commands
for cmd, extra in [("timeline",[]),("timeline",["--json"]),("timeline",["--csv"]),("fit",["--gpu","h100-80gb"]),("fit",["--budget","80GiB"]),
                   ("fit",["--budget","1KiB"]),("plan",["--gpu","h100-80gb"]),("sweep",["--sweep-micro-batches","1,2","--sweep-seqs","64,128"]),
                   ("sweep",["--sweep-micro-batches","1,1048576","--sweep-seqs","64,1073741824"]),("explain",[]),("explain",["--json"])]:
    for fam, base in [("nh",NH),("m2",M2)]:
        for prof in ["pytorch","megatron"]:
            case(f"cmd_{cmd}_{'_'.join(x.strip('-') for x in extra)}_{fam}_{prof}", base, [cmd,"--profile",prof] + extra)
    for pr in ["nemotron-h-56b","mamba-codestral-7b"]:
        case(f"cmd_{cmd}_{'_'.join(x.strip('-') for x in extra)}_{pr}", None, [cmd,"--preset",pr,"--profile","pytorch"] + extra)

CMDS = {"timeline","fit","plan","sweep","explain","estimate"}
def run_all(only=None):
    rows = []
    for name, text, args, note in cases:
        if only and not re.search(only, name): continue
        argv = list(args)
        if not argv or argv[0] not in CMDS: argv = ["estimate"] + argv
        if text is not None:
            fn = f"{D}/in/{name}.json"
            with open(fn, "w") as f: f.write(text)
            argv = [argv[0], "--model", fn] + argv[1:]
        t0 = time.time()
        try:
            p = subprocess.run(["timeout","10",BIN] + argv, capture_output=True)
            rc = p.returncode; out = p.stdout; err = p.stderr
        except Exception as e:
            rc = -999; out = b""; err = str(e).encode()
        dt = time.time() - t0
        errs = err.decode("utf-8","replace")
        outs = out.decode("utf-8","replace")
        flags = []
        if rc not in (0, 2): flags.append(f"rc{rc}")
        if dt > 5: flags.append("slow")
        if rc == 2:
            lines = errs.rstrip("\n").split("\n")
            if len(lines) != 1: flags.append("multiline_err")
            if not lines[0].startswith("actmem: error: "): flags.append("err_prefix")
            if out: flags.append("stdout_on_err")
        if rc == 0:
            if err: flags.append("stderr_on_ok")
            if re.search(r"(?<![\w.])-\d", outs.replace("-Infinity","")) and "--json" not in argv: 
                # negative numbers in table
                if re.search(r"\s-\d[\d,]*\s*B", outs): flags.append("negative")
            if re.search(r"\b(nan|inf)\b", outs, re.I): flags.append("naninf")
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", outs + errs): flags.append("ctrl")
        first = errs.split("\n")[0][:400] if rc != 0 else ""
        rows.append((name, " ".join(argv).replace(D+"/in/",""), rc, round(dt,3), len(out), first, ",".join(flags)))
    return rows

# ---- round 2 additions: WIP MoE ('E') and transformers-alias keys
NHE = setkey(setkey(NH, "hybrid_override_pattern", '"MEM*"'), "n_routed_experts", "8")
for k, vals in {"n_routed_experts": ["0","1","2","7",str(2**40),str(2**40+1),"NaN","null","8.5"],
                "num_experts_per_tok": ["0","1","8","9","NaN","null",str(2**40)],
                "moe_intermediate_size": ["0","1",str(2**40),str(2**40+1),"null"],
                "moe_shared_expert_intermediate_size": ["0","1",str(2**40),"null"],
                "n_shared_experts": ["0","1","2","1025","null"],
                "n_group": ["0","1","3","8","16","null"],
                "topk_group": ["0","1","2","9","null"],
                "norm_topk_prob": ["true","false","1","null"],
                "moe_latent_size": ["null","64","0"],
                "num_nextn_predict_layers": ["0","1","null","NaN"],
                "routed_scaling_factor": ["2.5","NaN"]}.items():
    for v in vals:
        case(f"nhE_{k}_{v}", setkey(NHE, k, v), SEQ)
for a in [["--ep","2"],["--ep","8"],["--ep","3"],["--tp","2"],["--tp","2","--ep","2"],["--profile","megatron"],["--profile","hf","--attention","flash"],["--moe-imbalance","2","--ep","2"],["--recompute","selective"]]:
    case("nhE_par_" + "_".join(x.strip("-") for x in a), NHE, SEQ + a)
case("nhE_no_experts_key", setkey(NH, "hybrid_override_pattern", '"MEM*"'), SEQ)
case("nh_moe_keys_without_E", setkey(setkey(NH, "n_routed_experts", "8"), "num_experts_per_tok", "99"), SEQ)
for k, v in [("mamba_conv_bias","false"),("mamba_expand","4"),("layers_block_type",'["mlp","mlp","mlp","mlp"]'),
             ("use_mamba_kernels","false"),("mamba_dt_limit","[0.0, 1.0]"),("mamba_dt_min","0.1"),("mamba_dt_init_floor","0.1")]:
    case(f"nh_alias_{k}", setkey(NH, k, v), ["--seq","64","--profile","hf","--attention","flash"])


# ---- round 3: confirmations of ad-hoc probes
def rd(n): return open(f"{D}/in/{n}.json").read()
case("z_utf8_pattern_5layers", rd("x_nh_utf8_5"), SEQ)
case("z_emdash_pattern_3layers", rd("x_nh_emdash"), SEQ)
case("z_tp_allowed_list_h12g12_tp8", rd("x_nh_h12g12"), ["--seq","64","--tp","8"])
case("z_tp_allowed_list_h12g12_tp3", rd("x_nh_h12g12"), ["--seq","64","--tp","3"])
case("z_m2_tp16_names_mamba_num_heads", rd("x_m2_g8"), ["--seq","64","--tp","16"])
case("z_hpn_overflow_seq1_pt", rd("x_nh_hpn_overflow"), ["--seq","1","--profile","pytorch"])
case("z_chunk2p40_seq1_pt", rd("nh_chunk_size_p40"), ["--seq","1","--profile","pytorch"])
case("z_plan_65536_mix_pp64", rd("x_nh_65536_mix"), ["plan","--gpu","h100-80gb","--pp","64","--seq","64"])
case("z_plan_65536_M_pp64", rd("x_nh_65536_M"), ["plan","--gpu","h100-80gb","--pp","64","--seq","64"])
case("z_plan_65536_llama_pp64", rd("x_llama_65536"), ["plan","--gpu","h100-80gb","--pp","64","--seq","64"])
case("z_timeline_65536_mix_pp64_mb8192", rd("x_nh_65536_mix"), ["timeline","--pp","64","--micro-batches","8192","--json","--seq","64"])
case("z_timeline_65536_llama_pp64_mb8192", rd("x_llama_65536"), ["timeline","--pp","64","--micro-batches","8192","--json","--seq","64"])
case("z_hidden_dropout_flag_hf", NH, ["--seq","64","--profile","hf","--hidden-dropout","0.1"])
case("z_dropout_flag_megatron", NH, ["--seq","64","--dropout","0.1"])
case("z_explain_header", NH, ["explain","--seq","64"])
case("z_m2_must_equal_but_equal", rd("m2_over_h2p40_heads2p21_hd2p20_pytorch"), ["--seq","64"])
case("z_65537_layers", rd("nh_pat_65537_layers"), ["--seq","64"])

if __name__ == "__main__":
    only = sys.argv[1] if len(sys.argv) > 1 else None
    rows = run_all(only)
    outfn = f"{D}/results.tsv" if not only else f"{D}/results_partial.tsv"
    with open(outfn, "w") as f:
        f.write("name\targv\trc\tsecs\tstdout_bytes\tstderr_first\tflags\n")
        for r in rows: f.write("\t".join(str(x).replace("\t"," ") for x in r) + "\n")
    print(len(rows), "cases;", sum(1 for r in rows if r[6]), "flagged")

