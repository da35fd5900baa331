#!/usr/bin/env python3
"""Round 8 hostile-input campaign: gpt_oss, phimoe, llama4_text and the llama4 / gemma3 wrappers.

Each case writes a model file, runs actmem with a 10 s timeout and records one JSON line in
results.jsonl (args, model text, exit code, stderr first line, elapsed, flags). Flags:
  BADRC        exit code not 0/2 (signal or other)
  TIMEOUT      ran past 10 s
  BADERRFMT    rc 2 but stderr is not exactly one line 'actmem: error: <field>: ...'
  WRONGFIELD   rc 2 but the error does not start with the expected field
  CTRL         raw control characters (other than the final newline) on stderr
  LONGERR      error line longer than 1000 characters
  EXPECTn      exit code differs from the expected n
  IGNORED      rc 0 and the estimate equals the named baseline's although a key that changes
               memory was set (the key was silently ignored)
  NOTSAME      rc 0 and the estimate differs from a baseline it should equal
  NUM          negative / non-finite number in the JSON answer
Usage: python3 run8.py   (writes results.jsonl next to this file)
"""
import copy
import json
import os
import re
import subprocess
import sys
import time

A = '/work/main/build/native/actmem'
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'results.jsonl')
TMP = '/tmp/hostile8/f'
os.makedirs(TMP, exist_ok=True)
DATA = '/work/main/tests/data/hf'
ARGS = ['--seq', '128', '--micro-batch', '1']

results = []
fps = {}
names = set()

ERR_RE = re.compile(r'^actmem: error: (model|config|--[A-Za-z-]+)([.\[][^ ]*)?: .+')
CTRL_RE = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')


def walk(o, p=''):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from walk(v, p + '.' + k)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from walk(v, p + f'[{i}]')
    else:
        yield p, o


def fingerprint(j):
    try:
        return dict(params=j['model']['params'], peak=j['peak_bytes'], total=j['total_bytes'],
                    act=j['activations']['total_bytes'], kv=j['kv_cache']['total_bytes'],
                    static=j['static']['total_bytes'],
                    kinds=len(j['model'].get('layer_kinds', []) or []))
    except Exception:
        return None


def dumps(model):
    if isinstance(model, (str, bytes)):
        return model
    return json.dumps(model)


def run(name, model, args=None, cmd='estimate', expect=None, field=None, same_as=None,
        differ_from=None, note='', json_out=True, model_path=None):
    assert name not in names, name
    names.add(name)
    args = list(ARGS if args is None else args)
    if model_path is None:
        text = dumps(model)
        model_path = os.path.join(TMP, name + '.json')
        with open(model_path, 'wb') as f:
            f.write(text if isinstance(text, bytes) else text.encode('utf-8', 'surrogatepass'))
    else:
        text = open(model_path, 'rb').read().decode('utf-8', 'replace')
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    full = [cmd, '--model', model_path] + args + (['--json'] if json_out else [])
    for attempt in range(20):  # the binary may briefly be missing while it is rebuilt
        if os.access(A, os.X_OK):
            try:
                t = time.time()
                p = subprocess.run([A] + full, capture_output=True, timeout=10)
                rc, out, err = p.returncode, p.stdout, p.stderr
                break
            except subprocess.TimeoutExpired as e:
                rc, out, err = 'TIMEOUT', e.stdout or b'', e.stderr or b''
                break
            except OSError:
                pass
        time.sleep(30)
    else:
        raise SystemExit('actmem binary unavailable')
    wall = time.time() - t
    binary_mtime = int(os.stat(A).st_mtime)
    out = out.decode('utf-8', 'replace')
    err = err.decode('utf-8', 'replace')
    flags = []
    if rc == 'TIMEOUT':
        flags.append('TIMEOUT')
    elif rc not in (0, 2):
        flags.append(f'BADRC:{rc}')
    lines = err.rstrip('\n').split('\n') if err else []
    first = lines[0] if lines else ''
    if CTRL_RE.search(err.rstrip('\n')):
        flags.append('CTRL')
    if rc == 2:
        if len(lines) != 1 or not ERR_RE.match(first) or not err.endswith('\n'):
            flags.append('BADERRFMT')
        if len(first) > 1000:
            flags.append('LONGERR')
        if field is not None and not first.startswith('actmem: error: ' + field + ':') \
                and not first.startswith('actmem: error: ' + field + '['):
            flags.append('WRONGFIELD')
    if expect is not None and rc != expect:
        flags.append(f'EXPECT{expect}')
    fp = None
    warnings = None
    if rc == 0 and json_out:
        try:
            j = json.loads(out)
        except Exception:
            j = None
            flags.append('BADJSON')
        if j is not None:
            for pth, v in walk(j):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if v < 0 or v != v or v in (float('inf'), float('-inf')):
                        flags.append(f'NUM:{pth}={v}')
                        break
            if cmd == 'estimate':
                fp = fingerprint(j)
                warnings = j.get('warnings')
    if fp is not None:
        fps[name] = fp
        # Training memory only: the inference KV cache (sliding windows, chunked attention
        # shrink it) and the number of layer kinds are left out of the comparison.
        train = lambda f: {k: v for k, v in f.items() if k not in ('kv', 'kinds')}
        if differ_from is not None and differ_from in fps and \
                train(fps[differ_from]) == train(fp):
            flags.append(f'IGNORED(={differ_from})')
        if same_as is not None and same_as in fps and train(fps[same_as]) != train(fp):
            flags.append(f'NOTSAME({same_as})')
    r = dict(name=name, cmd=cmd, args=full[3:], model=text[:3000],
             model_len=len(text), rc=rc, stderr_first=first[:2000], stderr_lines=len(lines),
             elapsed=round(wall, 3), flags=flags, expect=expect, field=field,
             same_as=same_as, differ_from=differ_from, fingerprint=fp, warnings=warnings,
             note=note, binary_mtime=binary_mtime)
    results.append(r)
    print(f"{name:44s} rc={rc} {wall:5.2f}s {' '.join(flags)} | {first[:150]}", flush=True)
    return r


def mut(base, upd=None, drop=()):
    o = copy.deepcopy(base)
    for k in drop:
        o.pop(k, None)
    if upd:
        o.update(upd)
    return o


def save():
    with open(OUT, 'w') as f:
        for r in results:
            f.write(json.dumps(r, ensure_ascii=True) + '\n')


# ---------------------------------------------------------------- bases
GO = {"model_type": "gpt_oss", "hidden_size": 256, "intermediate_size": 256,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
      "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": 32,
      "layer_types": ["sliding_attention", "full_attention"], "vocab_size": 1024,
      "max_position_embeddings": 512}
PM = {"model_type": "phimoe", "hidden_size": 256, "intermediate_size": 256,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1024,
      "max_position_embeddings": 512}
L4 = {"model_type": "llama4_text", "hidden_size": 256, "intermediate_size": 256,
      "intermediate_size_mlp": 512, "num_hidden_layers": 4, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "num_local_experts": 4,
      "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "attention_chunk_size": 32,
      "vocab_size": 1024, "max_position_embeddings": 512}
GO20 = json.load(open(f'{DATA}/gpt-oss-20b.config.json'))
SCOUT = json.load(open(f'{DATA}/llama-4-scout-17b-16e-instruct.aiconfigurator.config.json'))
SCOUTNV = mut(SCOUT, drop=('vision_config',))
G1B = json.load(open(f'{DATA}/gemma-3-1b-it.config.json'))
G3W = {"model_type": "gemma3", "text_config": copy.deepcopy(G1B)}

# Raw JSON number/token texts (not expressible through json.dumps).
RAW = {'NaN': 'NaN', 'Inf': 'Infinity', 'NegInf': '-Infinity', '1e400': '1e400',
       '2p64': '18446744073709551616', 'neg0': '-0', 'huge_int': '1' + '0' * 400}


def raw_set(base, key, rawtext):
    """The base's JSON text with key's value replaced by rawtext."""
    o = mut(base, {key: '__RAW__'})
    return json.dumps(o).replace('"__RAW__"', rawtext)


GENERIC_VALS = [('0', 0), ('neg1', -1), ('f1_5', 1.5), ('str8', '8'), ('null', None),
                ('true', True), ('arr', []), ('obj', {}), ('2p62', 2 ** 62), ('2p40', 2 ** 40)]


def int_key_sweep(prefix, base, key, allowed_ok=(), field=None):
    field = field or 'model.' + key
    for tag, v in GENERIC_VALS:
        exp = None if tag in allowed_ok else 2
        run(f'{prefix}_{key}_{tag}', mut(base, {key: v}), expect=exp, field=field)
    for tag, t in RAW.items():
        run(f'{prefix}_{key}_raw{tag}', raw_set(base, key, t), expect=2,
            field=None if tag in ('1e400', 'huge_int') else field)


def main():
    # ------------------------------------------------------------ baselines
    run('base_go', GO, expect=0)
    run('base_pm', PM, expect=0)
    run('base_l4', L4, expect=0)
    run('base_go20', GO20, expect=0)
    run('base_scout_vision', SCOUT, expect=2, field='model.vision_config')
    run('base_scout', SCOUTNV, expect=0)
    run('base_g3w', G3W, expect=0)
    run('base_g1b', G1B, expect=0)
    run('base_scout_text', SCOUT['text_config'], expect=0, same_as='base_scout')
    run('base_g3w_same_g1b', G3W, expect=0, same_as='base_g1b')

    # ------------------------------------------------------------ gpt_oss: integer keys
    for k in ['num_local_experts', 'num_experts_per_tok', 'experts_per_token',
              'num_key_value_heads', 'head_dim', 'intermediate_size', 'num_hidden_layers',
              'sliding_window', 'initial_context_length']:
        ok = ()
        if k in ('num_key_value_heads', 'head_dim', 'intermediate_size', 'sliding_window',
                 'initial_context_length'):
            ok = ('2p40', '2p62', 'null')
        int_key_sweep('go', GO, k, allowed_ok=ok)
    # experts_per_token agreement
    run('go_ept_agree', mut(GO, {'experts_per_token': 2}), expect=0, same_as='base_go')
    run('go_ept_agree_float', mut(GO, {'experts_per_token': 2.0}), expect=0, same_as='base_go')
    run('go_ept_conflict', mut(GO, {'experts_per_token': 4}), expect=2,
        field='model.experts_per_token')
    run('go_ept_only', mut(GO, {'experts_per_token': 2}, drop=('num_experts_per_tok',)),
        expect=2, field='model.num_experts_per_tok')
    run('go_no_nept', mut(GO, drop=('num_experts_per_tok',)), expect=2,
        field='model.num_experts_per_tok')
    run('go_no_experts', mut(GO, drop=('num_local_experts',)), expect=2,
        field='model.num_local_experts')
    run('go_no_kv', mut(GO, drop=('num_key_value_heads',)), expect=2,
        field='model.num_key_value_heads')
    run('go_k_gt_E', mut(GO, {'num_experts_per_tok': 16}), expect=2)
    run('go_E16', mut(GO, {'num_local_experts': 16}), expect=0, differ_from='base_go')
    run('go_k4', mut(GO, {'num_experts_per_tok': 4}), expect=0, differ_from='base_go')
    run('go_E1_k1', mut(GO, {'num_local_experts': 1, 'num_experts_per_tok': 1}), expect=0)
    run('go_no_head_dim', mut(GO, drop=('head_dim',)), expect=0, same_as='base_go',
        note='class default 64 = given 64')
    run('go_head_dim32', mut(GO, {'head_dim': 32}), expect=0, differ_from='base_go')
    run('go_head_dim_odd', mut(GO, {'head_dim': 63}), expect=None)
    run('go_inter512', mut(GO, {'intermediate_size': 512}), expect=0, differ_from='base_go')
    run('go_no_inter', mut(GO, drop=('intermediate_size',)), expect=None)
    # swiglu_limit (float)
    for tag, v in [('0', 0), ('neg', -1), ('str', '7'), ('null', None), ('true', True),
                   ('arr', [7]), ('tiny', 1e-300)]:
        run(f'go_swiglu_{tag}', mut(GO, {'swiglu_limit': v}), expect=0 if tag == 'tiny' else 2,
            field='model.swiglu_limit')
    for tag in ['NaN', 'Inf', 'NegInf', '1e400']:
        run(f'go_swiglu_raw{tag}', raw_set(GO, 'swiglu_limit', RAW[tag]), expect=2,
            field=None if tag == '1e400' else 'model.swiglu_limit')
    run('go_swiglu_7', mut(GO, {'swiglu_limit': 7.0}), expect=0, same_as='base_go')
    run('go_swiglu_huge', mut(GO, {'swiglu_limit': 1e308}), expect=0, same_as='base_go')
    # booleans
    for k in ['attention_bias', 'attn_sinks', 'tie_word_embeddings', 'output_router_logits']:
        for tag, v in [('str', 'true'), ('one', 1), ('zero', 0), ('null', None), ('arr', [])]:
            exp = 2
            run(f'go_{k}_{tag}', mut(GO, {k: v}), expect=exp, field='model.' + k)
    run('go_attn_bias_false', mut(GO, {'attention_bias': False}), expect=0,
        differ_from='base_go')
    run('go_attn_bias_true', mut(GO, {'attention_bias': True}), expect=0, same_as='base_go')
    run('go_sinks_true', mut(GO, {'attn_sinks': True}), expect=0, same_as='base_go')
    run('go_sinks_false', mut(GO, {'attn_sinks': False}), expect=2, field='model.attn_sinks')
    run('go_tie_true', mut(GO, {'tie_word_embeddings': True}), expect=0, differ_from='base_go')
    run('go_orl_false', mut(GO, {'output_router_logits': False}), expect=0, same_as='base_go')
    run('go_orl_true', mut(GO, {'output_router_logits': True}), expect=2,
        field='model.output_router_logits')
    run('go_attn_drop', mut(GO, {'attention_dropout': 0.1}), expect=0, differ_from='base_go')
    run('go_attn_drop_1', mut(GO, {'attention_dropout': 1.0}), expect=2,
        field='model.attention_dropout')
    # hidden_act
    for tag, v in [('gelu', 'gelu'), ('swish', 'swish'), ('null', None), ('int', 1),
                   ('empty', ''), ('upper', 'SILU'), ('long', 'x' * 100000),
                   ('ctrl', 'si\x1b[31mlu\n'), ('nul', 'silu\x00')]:
        run(f'go_act_{tag}', mut(GO, {'hidden_act': v}), expect=2, field='model.hidden_act')
    run('go_act_silu', mut(GO, {'hidden_act': 'silu'}), expect=0, same_as='base_go')
    # refused family keys
    for k, v in [('mlp_bias', True), ('mlp_bias', False), ('num_experts', 8),
                 ('moe_intermediate_size', 256), ('num_shared_experts', 1),
                 ('shared_expert_intermediate_size', 256), ('num_experts', None)]:
        run(f'go_refuse_{k}_{v}', mut(GO, {k: v}), expect=2, field='model.' + k)
    run('go_decoder_sparse_step', mut(GO, {'decoder_sparse_step': 2}), expect=2,
        field='model.decoder_sparse_step')
    run('go_mlp_only_layers', mut(GO, {'mlp_only_layers': [0]}), expect=2,
        field='model.mlp_only_layers')
    # layer_types
    LT = 'layer_types'
    for tag, v in [('short', ['sliding_attention']),
                   ('long', ['sliding_attention', 'full_attention', 'full_attention']),
                   ('empty', []), ('str', 'sliding_attention'), ('obj', {}), ('int', 2),
                   ('bad', ['sliding_attention', 'chunked_attention']),
                   ('nullentry', ['sliding_attention', None]),
                   ('intentry', ['sliding_attention', 1]),
                   ('nested', [['sliding_attention'], 'full_attention']),
                   ('case', ['Sliding_Attention', 'full_attention']),
                   ('ctrl', ['sliding_attention\n', 'full_attention']),
                   ('longentry', ['s' * 50000, 'full_attention']),
                   ('huge', ['full_attention'] * 200000)]:
        run(f'go_lt_{tag}', mut(GO, {LT: v}), expect=2, field='model.layer_types')
    run('go_lt_null', mut(GO, {LT: None}), expect=0, same_as='base_go')
    run('go_lt_all_sliding', mut(GO, {LT: ['sliding_attention'] * 2}), expect=0,
        same_as='base_go')
    run('go_lt_all_full', mut(GO, {LT: ['full_attention'] * 2}), expect=0, same_as='base_go')
    run('go_lt_missing', mut(GO, drop=(LT,)), expect=0, same_as='base_go')
    run('go_sw_null', mut(GO, {'sliding_window': None}), expect=0, same_as='base_go')
    run('go_sw_1', mut(GO, {'sliding_window': 1}), expect=0, same_as='base_go')
    for att in ['flash', 'eager']:
        for prof in ['hf', 'pytorch']:
            a = ARGS + ['--attention', att, '--profile', prof]
            run(f'go_{prof}_{att}_full', mut(GO, {LT: ['full_attention'] * 2}), args=a,
                expect=0)
            run(f'go_{prof}_{att}_sliding', mut(GO, {LT: ['sliding_attention'] * 2}), args=a,
                expect=0, same_as=f'go_{prof}_{att}_full')
            run(f'go_{prof}_{att}_sw1', mut(GO, {'sliding_window': 1}), args=a, expect=0,
                same_as=f'go_{prof}_{att}_full')
    # many layers
    run('go_L65536_default_lt', mut(GO, {'num_hidden_layers': 65536}, drop=(LT,)), expect=0)
    run('go_L65536_lt', mut(GO, {'num_hidden_layers': 65536,
                                LT: ['sliding_attention', 'full_attention'] * 32768}), expect=0)
    run('go_L65537', mut(GO, {'num_hidden_layers': 65537}, drop=(LT,)), expect=2,
        field='model.num_hidden_layers')
    run('go_L2p40_lt2', mut(GO, {'num_hidden_layers': 2 ** 40}), expect=2,
        field='model.num_hidden_layers')
    run('go_L100000_lt', mut(GO, {'num_hidden_layers': 100000,
                                 LT: ['full_attention'] * 100000}), expect=2,
        field='model.num_hidden_layers')
    run('go_L65536_timeline', mut(GO, {'num_hidden_layers': 65536}, drop=(LT,)),
        cmd='timeline', expect=None)
    run('go_L65536_plan', mut(GO, {'num_hidden_layers': 65536}, drop=(LT,)), cmd='plan',
        args=ARGS + ['--gpu', 'h100-80gb'], expect=None)
    run('go_L65536_pp', mut(GO, {'num_hidden_layers': 65536}, drop=(LT,)),
        args=ARGS + ['--pp', '4096'], expect=None)
    # quantization / attention implementation
    run('go_q_mxfp4', mut(GO, {'quantization_config': {'quant_method': 'mxfp4'}}), expect=0,
        same_as='base_go')
    run('go_q_fp8', mut(GO, {'quantization_config': {'quant_method': 'fp8'}}), expect=2,
        field='model.quantization_config')
    run('go_q_str', mut(GO, {'quantization_config': 'mxfp4'}), expect=2,
        field='model.quantization_config')
    run('go_q_null', mut(GO, {'quantization_config': None}), expect=0, same_as='base_go')
    run('go_q_empty', mut(GO, {'quantization_config': {}}), expect=2,
        field='model.quantization_config')
    run('go_attn_impl', mut(GO, {'attn_implementation': 'sdpa'}), expect=2,
        field='model.attn_implementation')
    run('go_rope_weird', mut(GO, {'rope_scaling': {'rope_type': 'yarn', 'factor': 'x'}}),
        expect=0, same_as='base_go')
    run('go_rope_theta_nan', raw_set(GO, 'rope_theta', 'NaN'), expect=None)
    run('go_router_coef', mut(GO, {'router_aux_loss_coef': -5}), expect=0, same_as='base_go')
    run('go_layer_kinds_dense', mut(GO, {'layer_kinds': {'d': {'num_local_experts': 0}},
                                         'layer_stack': [{'kind': 'd', 'repeat': 1},
                                                         {'kind': 'base', 'repeat': 1}]}),
        expect=None)
    run('go_layer_kinds_nosinks', mut(GO, {'layer_kinds': {'n': {'attn_sinks': False}},
                                           'layer_stack': [{'kind': 'n', 'repeat': 2}]}),
        expect=None, note='top-level attn_sinks false is refused for gpt_oss')
    # real gpt-oss-20b file
    run('go20_no_q', mut(GO20, drop=('quantization_config',)), expect=0, same_as='base_go20')
    run('go20_ept_conflict', mut(GO20, {'experts_per_token': 2}), expect=2,
        field='model.experts_per_token')
    run('go20_lt_23', mut(GO20, {LT: GO20[LT][:23]}), expect=2, field='model.layer_types')
    run('go20_L48', mut(GO20, {'num_hidden_layers': 48}), expect=2, field='model.layer_types')
    run('go20_orl_true', mut(GO20, {'output_router_logits': True}), expect=2,
        field='model.output_router_logits')
    run('go20_swiglu_0', mut(GO20, {'swiglu_limit': 0}), expect=2, field='model.swiglu_limit')
    run('go20_q_gptq', mut(GO20, {'quantization_config': {'quant_method': 'gptq'}}), expect=2,
        field='model.quantization_config')
    run('go20_q_nomethod', mut(GO20, {'quantization_config': {'bits': 4}}), expect=2,
        field='model.quantization_config')
    run('go20_hf_sdpa', GO20, args=ARGS + ['--profile', 'hf', '--attention', 'sdpa_math'],
        expect=2, field='config.attention')
    run('go20_sdpa', GO20, args=ARGS + ['--attention', 'sdpa_math'], expect=2,
        field='config.attention')
    run('go20_hf_flash', GO20, args=ARGS + ['--profile', 'hf', '--attention', 'flash'],
        expect=0)
    run('go20_hf_eager', GO20, args=ARGS + ['--profile', 'hf'], expect=0)
    for tp in [2, 4, 8, 16, 3, 64, 128]:
        exp = 0 if tp in (2, 4, 8, 16, 64) else 2
        run(f'go20_tp{tp}', GO20, args=ARGS + ['--tp', str(tp)], expect=exp,
            field='config.tp' if exp == 2 else None)
    for ep, dp, exp in [(2, 2, 0), (2, 1, 2), (4, 4, 0), (32, 32, 0), (64, 64, 2), (3, 3, 2),
                        (8, 4, 2)]:
        run(f'go20_ep{ep}_dp{dp}', GO20, args=ARGS + ['--ep', str(ep), '--dp', str(dp)],
            expect=exp, field='config.ep' if exp == 2 else None)
    run('go20_tp2_ep2_dp2_sp', GO20, args=ARGS + ['--tp', '2', '--ep', '2', '--dp', '2', '--sp'],
        expect=0)
    run('go20_imb', GO20, args=ARGS + ['--ep', '2', '--dp', '2', '--moe-imbalance', '2'],
        expect=0, differ_from='go20_ep2_dp2')
    run('go20_imb_gt_ep', GO20, args=ARGS + ['--ep', '2', '--dp', '2', '--moe-imbalance', '3'],
        expect=2, field='config.moe_imbalance')
    run('go20_seq1', GO20, args=['--seq', '1', '--micro-batch', '1'], expect=0)
    run('go20_seq0', GO20, args=['--seq', '0', '--micro-batch', '1'], expect=2,
        field='config.seq')
    for s in [str(2 ** 20), str(2 ** 31), str(2 ** 40), str(2 ** 62), str(2 ** 64), '-1', '1.5',
              'abc', '1e3', '']:
        run(f'go20_seq_{s[:12] or "empty"}', GO20, args=['--seq', s, '--micro-batch', '1'],
            expect=0 if s == str(2 ** 20) else None)
    for b in ['0', str(2 ** 40), '-3', str(2 ** 64)]:
        run(f'go20_mb_{b}', GO20, args=['--seq', '128', '--micro-batch', b],
            expect=2 if b in ('0', '-3', str(2 ** 64)) else None)
    run('go20_pp2', GO20, args=ARGS + ['--pp', '2'], expect=0)
    run('go20_pp5', GO20, args=ARGS + ['--pp', '5'], expect=2, field='config.pp')
    run('go20_cp2', GO20, args=ARGS + ['--cp', '2'], expect=0)
    run('go20_full_rc', GO20, args=ARGS + ['--recompute', 'full'], expect=0)
    run('go20_sel_rc', GO20, args=ARGS + ['--recompute', 'selective'], expect=0)
    run('go20_profile_textbook', GO20, args=ARGS + ['--profile', 'textbook'], expect=0)
    run('go20_profile_bogus', GO20, args=ARGS + ['--profile', 'bogus'], expect=2)
    run('go20_attention_bogus', GO20, args=ARGS + ['--attention', 'sdpa'], expect=2)
    run('go20_timeline', GO20, cmd='timeline', expect=0)
    run('go20_timeline_text', GO20, cmd='timeline', expect=0, json_out=False)
    run('go20_timeline_csv', GO20, cmd='timeline', args=ARGS + ['--csv'], expect=0,
        json_out=False)
    run('go20_plan_h100', GO20, cmd='plan', args=ARGS + ['--gpu', 'h100-80gb'], expect=0)
    run('go20_plan_nogpu', GO20, cmd='plan', expect=2, field='config.gpu')
    run('go20_plan_sdpa', GO20, cmd='plan',
        args=ARGS + ['--gpu', 'h100-80gb', '--attention', 'sdpa_math'], expect=2,
        field='config.attention')
    run('go20_timeline_sdpa', GO20, cmd='timeline', args=ARGS + ['--attention', 'sdpa_math'],
        expect=2, field='config.attention')
    run('go20_fit', GO20, cmd='fit', args=['--gpu', 'h200-141gb'], expect=None)
    run('go20_explain', GO20, cmd='explain', expect=0, json_out=False)

    # ------------------------------------------------------------ phimoe
    for k in ['num_local_experts', 'num_key_value_heads', 'intermediate_size',
              'num_hidden_layers', 'hidden_size', 'num_attention_heads', 'vocab_size']:
        ok = ()
        if k in ('intermediate_size', 'vocab_size'):
            ok = ('2p40',)
        int_key_sweep('pm', PM, k, allowed_ok=ok)
    for tag, v in [('1', 1), ('3', 3), ('0', 0), ('null', None), ('str', '2'), ('neg', -2),
                   ('true', True), ('arr', [2])]:
        run(f'pm_k_{tag}', mut(PM, {'num_experts_per_tok': v}), expect=2,
            field='model.num_experts_per_tok')
    run('pm_k_2f', mut(PM, {'num_experts_per_tok': 2.0}), expect=0, same_as='base_pm')
    run('pm_k_missing', mut(PM, drop=('num_experts_per_tok',)), expect=0, same_as='base_pm')
    run('pm_k_raw_nan', raw_set(PM, 'num_experts_per_tok', 'NaN'), expect=2,
        field='model.num_experts_per_tok')
    run('pm_no_experts', mut(PM, drop=('num_local_experts',)), expect=2,
        field='model.num_local_experts')
    run('pm_no_kv', mut(PM, drop=('num_key_value_heads',)), expect=2,
        field='model.num_key_value_heads')
    run('pm_E1', mut(PM, {'num_local_experts': 1}), expect=2)
    run('pm_E16', mut(PM, {'num_local_experts': 16}), expect=0, differ_from='base_pm')
    for k, rng_ok in [('input_jitter_noise', [0.01, 0.5]), ('router_jitter_noise', [0.01, 0.5])]:
        for tag, v in [('1', 1.0), ('neg', -0.1), ('2', 2), ('str', '0.1'), ('null', None),
                       ('true', True), ('arr', [0.1]), ('obj', {})]:
            run(f'pm_{k}_{tag}', mut(PM, {k: v}), expect=2, field='model.' + k)
        for tag in ['NaN', 'Inf', 'NegInf']:
            run(f'pm_{k}_raw{tag}', raw_set(PM, k, RAW[tag]), expect=2, field='model.' + k)
        run(f'pm_{k}_0', mut(PM, {k: 0}), expect=0, same_as='base_pm')
        run(f'pm_{k}_almost1', mut(PM, {k: 0.9999999999}), expect=0)
    run('pm_ijn_01', mut(PM, {'input_jitter_noise': 0.01}), expect=0, differ_from='base_pm')
    run('pm_ijn_tiny', mut(PM, {'input_jitter_noise': 1e-300}), expect=0,
        differ_from='base_pm')
    run('pm_rjn_05', mut(PM, {'router_jitter_noise': 0.5}), expect=0, same_as='base_pm')
    for tag, v in [('str', 'true'), ('one', 1), ('null', None), ('arr', [True])]:
        run(f'pm_lmhb_{tag}', mut(PM, {'lm_head_bias': v}), expect=2, field='model.lm_head_bias')
    run('pm_lmhb_true', mut(PM, {'lm_head_bias': True}), expect=0, differ_from='base_pm')
    run('pm_lmhb_false', mut(PM, {'lm_head_bias': False}), expect=0, same_as='base_pm')
    run('pm_lmhb_tied', mut(PM, {'lm_head_bias': True, 'tie_word_embeddings': True}), expect=0)
    run('pm_tied', mut(PM, {'tie_word_embeddings': True}), expect=0, differ_from='base_pm')
    run('pm_attn_bias', mut(PM, {'attention_bias': True}), expect=0, differ_from='base_pm')
    run('pm_attn_drop', mut(PM, {'attention_dropout': 0.1}), expect=0, differ_from='base_pm')
    for tag, v in [('rms', 'rmsnorm'), ('int', 1), ('null', None), ('upper', 'LayerNorm'),
                   ('ctrl', 'layer\tnorm')]:
        run(f'pm_norm_{tag}', mut(PM, {'norm_type': v}), expect=2, field='model.norm_type')
    run('pm_norm_ln', mut(PM, {'norm_type': 'layernorm'}), expect=0, same_as='base_pm')
    run('pm_gemma_norm', mut(PM, {'gemma_norm': True}), expect=2, field='model.gemma_norm',
        note='gemma_norm (an RMSNorm) with PhiMoE LayerNorms')
    run('pm_act_gelu', mut(PM, {'hidden_act': 'gelu'}), expect=None)
    for k, v in [('num_experts', 8), ('moe_intermediate_size', 256), ('num_shared_experts', 1),
                 ('shared_expert_intermediate_size', 256), ('mlp_bias', False),
                 ('mlp_bias', True), ('decoder_sparse_step', 1), ('mlp_only_layers', [])]:
        run(f'pm_refuse_{k}_{v}', mut(PM, {k: v}), expect=2, field='model.' + k)
    run('pm_orl_true', mut(PM, {'output_router_logits': True}), expect=2,
        field='model.output_router_logits')
    run('pm_orl_str', mut(PM, {'output_router_logits': 'false'}), expect=2,
        field='model.output_router_logits')
    run('pm_orl_false', mut(PM, {'output_router_logits': False}), expect=0, same_as='base_pm')
    run('pm_q', mut(PM, {'quantization_config': {'quant_method': 'mxfp4'}}), expect=2,
        field='model.quantization_config')
    run('pm_swiglu_limit', mut(PM, {'swiglu_limit': 7}), expect=0, same_as='base_pm')
    run('pm_sinks', mut(PM, {'attn_sinks': True}), expect=0, differ_from='base_pm')
    run('pm_hf_sdpa', PM, args=ARGS + ['--profile', 'hf', '--attention', 'sdpa_math'],
        expect=0)
    run('pm_hf_flash', PM, args=ARGS + ['--profile', 'hf', '--attention', 'flash'], expect=0)
    run('pm_hf_ijn', mut(PM, {'input_jitter_noise': 0.01}), args=ARGS + ['--profile', 'hf'],
        expect=0)
    run('pm_hf_base', PM, args=ARGS + ['--profile', 'hf'], expect=0,
        differ_from=None)
    run('pm_hf_ijn_cmp', mut(PM, {'input_jitter_noise': 0.02}), args=ARGS + ['--profile', 'hf'],
        expect=0, differ_from='pm_hf_base')
    run('pm_hf_lmhb', mut(PM, {'lm_head_bias': True}), args=ARGS + ['--profile', 'hf'],
        expect=0, differ_from='pm_hf_base')
    for tp, exp in [(2, 0), (4, 0), (8, 2), (3, 2)]:
        run(f'pm_tp{tp}', PM, args=ARGS + ['--tp', str(tp)], expect=exp,
            field='config.tp' if exp == 2 else None)
    for ep, dp, exp in [(2, 2, 0), (8, 8, 0), (3, 3, 2), (16, 16, 2), (2, 1, 2)]:
        run(f'pm_ep{ep}_dp{dp}', PM, args=ARGS + ['--ep', str(ep), '--dp', str(dp)],
            expect=exp, field='config.ep' if exp == 2 else None)
    run('pm_timeline', PM, cmd='timeline', expect=0)
    run('pm_plan', PM, cmd='plan', args=ARGS + ['--gpu-memory', '1GiB'], expect=0)
    run('pm_plan_tiny', PM, cmd='plan', args=ARGS + ['--gpu-memory', '1KiB'], expect=None)
    run('pm_seq1', PM, args=['--seq', '1', '--micro-batch', '1'], expect=0)
    run('pm_seq2p40', PM, args=['--seq', str(2 ** 40), '--micro-batch', '1'], expect=None)
    run('pm_L65536', mut(PM, {'num_hidden_layers': 65536}), expect=0)
    run('pm_L65536_timeline', mut(PM, {'num_hidden_layers': 65536}), cmd='timeline',
        expect=None)

    # ------------------------------------------------------------ llama4_text
    for k in ['num_local_experts', 'num_experts_per_tok', 'num_key_value_heads',
              'intermediate_size', 'intermediate_size_mlp', 'interleave_moe_layer_step',
              'no_rope_layer_interval', 'attention_chunk_size', 'num_hidden_layers']:
        ok = ()
        if k in ('interleave_moe_layer_step', 'no_rope_layer_interval', 'attention_chunk_size'):
            ok = ('2p40', '2p62')
        if k == 'attention_chunk_size':
            ok = ok + ('null',)
        if k == 'intermediate_size_mlp':
            ok = ('2p40',)
        int_key_sweep('l4', L4, k, allowed_ok=ok)
    run('l4_no_experts', mut(L4, drop=('num_local_experts',)), expect=2,
        field='model.num_local_experts')
    run('l4_no_kv', mut(L4, drop=('num_key_value_heads',)), expect=2,
        field='model.num_key_value_heads')
    run('l4_k_missing', mut(L4, drop=('num_experts_per_tok',)), expect=0, same_as='base_l4')
    run('l4_k2', mut(L4, {'num_experts_per_tok': 2}), expect=0, differ_from='base_l4')
    run('l4_k5', mut(L4, {'num_experts_per_tok': 5}), expect=2)
    run('l4_no_head_dim', mut(L4, drop=('head_dim',)), expect=0, differ_from='base_l4')
    run('l4_mlp_missing', mut(L4, drop=('intermediate_size_mlp',)), expect=0,
        differ_from='base_l4')
    run('l4_mlp_1024', mut(L4, {'intermediate_size_mlp': 1024}), expect=0,
        differ_from='base_l4')
    run('l4_mlp_2p62_allmoe', mut(L4, {'intermediate_size_mlp': 2 ** 62,
                                       'interleave_moe_layer_step': 1}), expect=None)
    run('l4_mlp_0_allmoe', mut(L4, {'intermediate_size_mlp': 0, 'interleave_moe_layer_step': 1}),
        expect=None)
    run('l4_step1', mut(L4, {'interleave_moe_layer_step': 1}), expect=0, differ_from='base_l4')
    run('l4_step4', mut(L4, {'interleave_moe_layer_step': 4}), expect=0, differ_from='base_l4')
    run('l4_step_missing', mut(L4, drop=('interleave_moe_layer_step',)), expect=0,
        same_as='l4_step1')
    run('l4_step5_alldense', mut(L4, {'interleave_moe_layer_step': 5}), expect=0,
        differ_from='base_l4')
    run('l4_step_2p62', mut(L4, {'interleave_moe_layer_step': 2 ** 62}), expect=0,
        same_as='l4_step5_alldense')
    # moe_layers
    ML = 'moe_layers'
    run('l4_ml_13', mut(L4, {ML: [1, 3]}), expect=0, same_as='base_l4')
    run('l4_ml_31', mut(L4, {ML: [3, 1]}), expect=0, same_as='base_l4')
    run('l4_ml_dup', mut(L4, {ML: [1, 1, 3, 3]}), expect=0, same_as='base_l4')
    run('l4_ml_float', mut(L4, {ML: [1.0, 3.0]}), expect=0, same_as='base_l4')
    run('l4_ml_empty', mut(L4, {ML: []}), expect=0, same_as='l4_step5_alldense')
    run('l4_ml_all', mut(L4, {ML: [0, 1, 2, 3]}), expect=0, same_as='l4_step1')
    run('l4_ml_0', mut(L4, {ML: [0]}), expect=0, differ_from='base_l4')
    run('l4_ml_null', mut(L4, {ML: None}), expect=0, same_as='base_l4')
    run('l4_ml_over_step', mut(L4, {ML: [0], 'interleave_moe_layer_step': 1}), expect=0,
        same_as='l4_ml_0')
    for tag, v in [('oob', [4]), ('neg', [-1]), ('frac', [1.5]), ('str', ['1']),
                   ('nullent', [None]), ('true', [True]), ('nested', [[1]]), ('2p62', [2 ** 62]),
                   ('2p64', [2 ** 64])]:
        run(f'l4_ml_{tag}', mut(L4, {ML: v}), expect=2, field='model.moe_layers[0]')
    for tag, v in [('strv', '1,3'), ('obj', {'0': 1}), ('int', 1), ('booltop', True)]:
        run(f'l4_ml_{tag}', mut(L4, {ML: v}), expect=2, field='model.moe_layers')
    run('l4_ml_huge', mut(L4, {ML: list(range(4)) * 60000}), expect=None)
    run('l4_ml_nan', raw_set(L4, ML, '[NaN]'), expect=2, field='model.moe_layers[0]')
    # no_rope_layers
    NR = 'no_rope_layers'
    run('l4_nr_default', mut(L4, {NR: [1, 1, 1, 0]}), expect=0, same_as='base_l4')
    run('l4_nr_empty', mut(L4, {NR: []}), expect=0, same_as='base_l4')
    run('l4_nr_null', mut(L4, {NR: None}), expect=0, same_as='base_l4')
    run('l4_nr_long', mut(L4, {NR: [1, 1, 1, 0, 0, 0, 7]}), expect=0, same_as='base_l4',
        note='entries past num_hidden_layers not read (HF indexes by layer)')
    run('l4_nr_allrope', mut(L4, {NR: [1, 1, 1, 1]}), expect=0, differ_from='base_l4')
    run('l4_nr_allnope', mut(L4, {NR: [0, 0, 0, 0]}), expect=0, differ_from='base_l4')
    run('l4_nr_floats', mut(L4, {NR: [1.0, 1.0, 1.0, 0.0]}), expect=0, same_as='base_l4')
    run('l4_nri_huge', mut(L4, {'no_rope_layer_interval': 2 ** 62}), expect=0,
        same_as='l4_nr_allrope')
    run('l4_nri_1', mut(L4, {'no_rope_layer_interval': 1}), expect=0, same_as='l4_nr_allnope')
    run('l4_nri_2', mut(L4, {'no_rope_layer_interval': 2}), expect=0, differ_from='base_l4')
    run('l4_nr_over_interval', mut(L4, {NR: [1, 1, 1, 1], 'no_rope_layer_interval': 1}),
        expect=0, same_as='l4_nr_allrope')
    run('l4_nr_empty_interval', mut(L4, {NR: [], 'no_rope_layer_interval': 1}), expect=0,
        same_as='l4_nr_allnope', note='HF: empty no_rope_layers falls back to the interval')
    for tag, v in [('short', [1, 1, 1]), ('str', '1110'), ('obj', {}), ('int', 1),
                   ('true', True)]:
        run(f'l4_nr_{tag}', mut(L4, {NR: v}), expect=2, field='model.no_rope_layers')
    for tag, v in [('two', [2, 1, 1, 0]), ('neg', [-1, 1, 1, 0]), ('bool', [True, 1, 1, 0]),
                   ('strent', ['1', 1, 1, 0]), ('nullent', [None, 1, 1, 0]),
                   ('half', [0.5, 1, 1, 0]), ('nested', [[1], 1, 1, 0])]:
        run(f'l4_nr_{tag}', mut(L4, {NR: v}), expect=2, field='model.no_rope_layers')
    run('l4_nr_nan', raw_set(L4, NR, '[NaN,1,1,0]'), expect=2, field='model.no_rope_layers')
    # qk norm / temperature
    run('l4_qk_false', mut(L4, {'use_qk_norm': False}), expect=0, differ_from='base_l4')
    run('l4_temp_false', mut(L4, {'attn_temperature_tuning': False}), expect=0,
        differ_from='base_l4')
    run('l4_temp_false_allrope', mut(L4, {'attn_temperature_tuning': False, NR: [1, 1, 1, 1]}),
        expect=0, same_as='l4_nr_allrope')
    run('l4_qk_false_allnope', mut(L4, {'use_qk_norm': False, NR: [0, 0, 0, 0]}), expect=0,
        same_as='l4_nr_allnope')
    for k in ['use_qk_norm', 'attn_temperature_tuning']:
        for tag, v in [('str', 'true'), ('one', 1), ('null', None), ('arr', [])]:
            run(f'l4_{k}_{tag}', mut(L4, {k: v}), expect=2, field='model.' + k)
    for k in ['floor_scale', 'attn_scale', 'for_llm_compressor']:
        for tag, v in [('str', 'abc'), ('neg', -5), ('null', None), ('obj', {'a': 1})]:
            run(f'l4_{k}_{tag}', mut(L4, {k: v}), expect=None, same_as='base_l4')
    run('l4_chunk_null', mut(L4, {'attention_chunk_size': None}), expect=0, same_as='base_l4')
    run('l4_chunk_missing', mut(L4, drop=('attention_chunk_size',)), expect=0,
        same_as='base_l4')
    for k, v in [('num_experts', 4), ('moe_intermediate_size', 256), ('num_shared_experts', 1),
                 ('num_shared_experts', 0), ('shared_expert_intermediate_size', 256),
                 ('mlp_bias', True), ('layer_kinds', {}), ('layer_stack', []),
                 ('decoder_sparse_step', 1), ('mlp_only_layers', [0])]:
        run(f'l4_refuse_{k}_{str(v)[:5]}', mut(L4, {k: v}), expect=2, field='model.' + k)
    run('l4_orl_true', mut(L4, {'output_router_logits': True}), expect=2,
        field='model.output_router_logits')
    run('l4_orl_null', mut(L4, {'output_router_logits': None}), expect=None)
    run('l4_layer_types', mut(L4, {'layer_types': ['chunked_attention'] * 3 + ['full_attention']}),
        expect=0, same_as='base_l4')
    run('l4_tie', mut(L4, {'tie_word_embeddings': True}), expect=0, differ_from='base_l4')
    run('l4_attn_bias', mut(L4, {'attention_bias': True}), expect=0, differ_from='base_l4')
    run('l4_act_gelu', mut(L4, {'hidden_act': 'gelu'}), expect=0, differ_from='base_l4')
    run('l4_act_relu', mut(L4, {'hidden_act': 'relu'}), expect=2, field='model.hidden_act')
    run('l4_ept', mut(L4, {'experts_per_token': 3}), expect=0, same_as='base_l4')
    # large stacks
    run('l4_L65536', mut(L4, {'num_hidden_layers': 65536}), expect=0)
    run('l4_L65536_lists', mut(L4, {'num_hidden_layers': 65536,
                                    ML: list(range(1, 65536, 2)),
                                    NR: [1, 1, 1, 0] * 16384}), expect=0)
    run('l4_L65536_nr_short', mut(L4, {'num_hidden_layers': 65536, NR: [1] * 65535}), expect=2,
        field='model.no_rope_layers')
    run('l4_L65537', mut(L4, {'num_hidden_layers': 65537}), expect=2,
        field='model.num_hidden_layers')
    run('l4_L2p40_ml', mut(L4, {'num_hidden_layers': 2 ** 40, ML: [0]}), expect=2,
        field='model.num_hidden_layers')
    run('l4_L2p40_num_experts', mut(L4, {'num_hidden_layers': 2 ** 40, 'num_experts': 4}),
        expect=2)
    run('l4_L65536_timeline', mut(L4, {'num_hidden_layers': 65536}), cmd='timeline',
        expect=None)
    run('l4_L65536_plan', mut(L4, {'num_hidden_layers': 65536}), cmd='plan',
        args=ARGS + ['--gpu', 'h100-80gb'], expect=None)
    run('l4_L65536_every', mut(L4, {'num_hidden_layers': 65536}),
        args=ARGS + ['--recompute', 'every:3'], expect=None)
    run('l4_L65536_pp_split', mut(L4, {'num_hidden_layers': 65536}),
        args=ARGS + ['--pp', '4', '--vpp', '4', '--grad-accum', '8'], expect=None)
    # CLI combos
    for prof in ['megatron', 'textbook', 'pytorch', 'hf']:
        for att in ['eager', 'sdpa_math', 'flash']:
            run(f'l4_{prof}_{att}', L4, args=ARGS + ['--profile', prof, '--attention', att],
                expect=0)
    for tp, exp in [(2, 0), (4, 0), (8, 2), (3, 2)]:
        run(f'l4_tp{tp}', L4, args=ARGS + ['--tp', str(tp)], expect=exp,
            field='config.tp' if exp == 2 else None)
    for ep, dp, exp in [(2, 2, 0), (4, 4, 0), (3, 3, 2), (8, 8, 2), (2, 1, 2)]:
        run(f'l4_ep{ep}_dp{dp}', L4, args=ARGS + ['--ep', str(ep), '--dp', str(dp)],
            expect=exp, field='config.ep' if exp == 2 else None)
    run('l4_alldense_ep2', mut(L4, {ML: []}), args=ARGS + ['--ep', '2', '--dp', '2'],
        expect=None, note='no MoE layer: ep has nothing to shard')
    run('l4_alldense_imb', mut(L4, {ML: []}),
        args=ARGS + ['--ep', '2', '--dp', '2', '--moe-imbalance', '2'], expect=None)
    run('l4_pp2', L4, args=ARGS + ['--pp', '2'], expect=0)
    run('l4_pp2_split', L4, args=ARGS + ['--pp', '2', '--layer-split', '1,3'], expect=0)
    run('l4_pp4_vpp', L4, args=ARGS + ['--pp', '2', '--vpp', '2', '--grad-accum', '2'],
        expect=0)
    run('l4_timeline', L4, cmd='timeline', expect=0)
    run('l4_plan', L4, cmd='plan', args=ARGS + ['--gpu', 'h100-80gb'], expect=0)
    run('l4_seq1', L4, args=['--seq', '1', '--micro-batch', '1'], expect=0)
    run('l4_seq_huge', L4, args=['--seq', str(2 ** 62), '--micro-batch', '1'], expect=None)

    # ------------------------------------------------------------ wrappers
    TC = 'text_config'
    for tag, v in [('arr', []), ('str', 'llama4_text'), ('null', None), ('int', 1),
                   ('true', True), ('arrobj', [SCOUT[TC]])]:
        run(f'w4_tc_{tag}', mut(SCOUTNV, {TC: v}), expect=2, field='model.text_config')
        run(f'wg3_tc_{tag}', mut(G3W, {TC: v}), expect=2, field='model.text_config')
    run('w4_tc_missing', mut(SCOUTNV, drop=(TC,)), expect=2, field='model.text_config')
    run('wg3_tc_missing', mut(G3W, drop=(TC,)), expect=2, field='model.text_config')
    run('w4_tc_empty', mut(SCOUTNV, {TC: {}}), expect=2, field='model.text_config.hidden_size')
    run('wg3_tc_empty', mut(G3W, {TC: {}}), expect=2, field='model.text_config.hidden_size')
    stc = SCOUT[TC]
    for tag, mt in [('llama4', 'llama4'), ('gemma3', 'gemma3_text'), ('llama', 'llama'),
                    ('null', None), ('int', 4), ('ctrl', 'llama4_text\x07')]:
        run(f'w4_tc_mt_{tag}', mut(SCOUTNV, {TC: mut(stc, {'model_type': mt})}), expect=2,
            field='model.text_config.model_type')
    for tag, mt in [('gemma3', 'gemma3'), ('llama4', 'llama4_text'), ('gemma2', 'gemma2')]:
        run(f'wg3_tc_mt_{tag}', mut(G3W, {TC: mut(G1B, {'model_type': mt})}), expect=2,
            field='model.text_config.model_type')
    run('w4_tc_no_mt', mut(SCOUTNV, {TC: mut(stc, drop=('model_type',))}), expect=0,
        same_as='base_scout')
    run('wg3_tc_no_mt', mut(G3W, {TC: mut(G1B, drop=('model_type',))}), expect=0,
        same_as='base_g3w')
    # recursion: a wrapper inside text_config
    run('w4_tc_wrapper_inside', mut(SCOUTNV, {TC: mut(SCOUTNV, {'model_type': 'llama4'})}),
        expect=2, field='model.text_config.model_type')
    run('w4_tc_nested_tc', mut(SCOUTNV, {TC: mut(stc, {TC: stc})}), expect=0,
        same_as='base_scout', note='inner text_config is an unknown key (warning)')
    run('w4_tc_nested_tc_nomt', mut(SCOUTNV, {TC: {TC: stc}}), expect=2,
        field='model.text_config.hidden_size')
    deep = stc
    for _ in range(60):
        deep = {'model_type': 'llama4', TC: deep}
    run('w4_recursive60', deep, expect=2, field='model.text_config.model_type')
    deep2 = {}
    for _ in range(70):
        deep2 = {'model_type': 'gemma3', TC: deep2}
    run('wg3_recursive70', deep2, expect=2)
    deep3 = '{"model_type":"llama4","text_config":' * 100000 + '{}' + '}' * 100000
    run('w4_recursive100000', deep3, expect=2, field='model')
    deep4 = '[' * 200000 + ']' * 200000
    run('w4_tc_deep_array', '{"model_type":"llama4","text_config":' + deep4 + '}', expect=2,
        field='model')
    run('deep_array_top', deep4, expect=2, field='model')
    # tie_word_embeddings between wrapper and text
    run('w4_tie_wrap_true', mut(SCOUTNV, {'tie_word_embeddings': True}), expect=0,
        differ_from='base_scout')
    run('w4_tie_conflict', mut(SCOUTNV, {'tie_word_embeddings': True,
                                         TC: mut(stc, {'tie_word_embeddings': False})}),
        expect=2, field='model.tie_word_embeddings')
    run('w4_tie_agree', mut(SCOUTNV, {'tie_word_embeddings': True,
                                      TC: mut(stc, {'tie_word_embeddings': True})}),
        expect=0, same_as='w4_tie_wrap_true')
    run('w4_tie_text_only', mut(SCOUTNV, {TC: mut(stc, {'tie_word_embeddings': True})}),
        expect=0, same_as='w4_tie_wrap_true')
    run('w4_tie_wrap_str', mut(SCOUTNV, {'tie_word_embeddings': 'yes'}), expect=2,
        field='model.tie_word_embeddings', note='the bad value is on the wrapper')
    run('w4_tie_wrap_null', mut(SCOUTNV, {'tie_word_embeddings': None}), expect=2,
        field='model.tie_word_embeddings')
    run('w4_tie_1_vs_true', mut(SCOUTNV, {'tie_word_embeddings': 1,
                                          TC: mut(stc, {'tie_word_embeddings': True})}),
        expect=2, field='model.tie_word_embeddings')
    run('wg3_tie_false', mut(G3W, {'tie_word_embeddings': False}), expect=0,
        differ_from='base_g3w')
    run('wg3_tie_conflict', mut(G3W, {'tie_word_embeddings': False,
                                      TC: mut(G1B, {'tie_word_embeddings': True})}), expect=2,
        field='model.tie_word_embeddings')
    run('wg3_tie_text_false', mut(G3W, {TC: mut(G1B, {'tie_word_embeddings': False})}),
        expect=0, same_as='wg3_tie_false')
    run('wg3_tie_wrap_arr', mut(G3W, {'tie_word_embeddings': [True]}), expect=2,
        field='model.tie_word_embeddings')
    # metadata
    run('w4_meta', mut(SCOUTNV, {'metadata': {'name': 'scout'}}), expect=0,
        same_as='base_scout')
    run('w4_meta_bad', mut(SCOUTNV, {'metadata': {'nmae': 'scout'}}), expect=2,
        field='model.metadata.nmae')
    run('w4_meta_str', mut(SCOUTNV, {'metadata': 'scout'}), expect=2, field='model.metadata')
    run('w4_meta_both', mut(SCOUTNV, {'metadata': {'name': 'a'},
                                      TC: mut(stc, {'metadata': {'bogus': 1}})}), expect=None,
        note='wrapper metadata replaces text metadata')
    # vision_config
    run('w4_vision_null', mut(SCOUT, {'vision_config': None}), expect=0, same_as='base_scout')
    run('w4_vision_empty', mut(SCOUT, {'vision_config': {}}), expect=2,
        field='model.vision_config')
    run('w4_vision_false', mut(SCOUT, {'vision_config': False}), expect=2,
        field='model.vision_config')
    run('wg3_vision', mut(G3W, {'vision_config': {'hidden_size': 1152}}), expect=2,
        field='model.vision_config')
    run('wg3_vision_null', mut(G3W, {'vision_config': None}), expect=0, same_as='base_g3w')
    # wrapper-level keys that would change memory in a plain config
    run('w4_wrap_q', mut(SCOUTNV, {'quantization_config': {'quant_method': 'fbgemm_fp8'}}),
        expect=2, field='model.quantization_config',
        note='HF multimodal checkpoints carry quantization_config at the top level')
    run('wg3_wrap_q', mut(G3W, {'quantization_config': {'quant_method': 'gptq', 'bits': 4}}),
        expect=2, field='model.quantization_config')
    run('w4_wrap_orl', mut(SCOUTNV, {'output_router_logits': True}), expect=None,
        note='top-level output_router_logits')
    run('w4_wrap_attn_impl', mut(SCOUTNV, {'attn_implementation': 'sdpa'}), expect=2,
        field='model.attn_implementation')
    run('w4_wrap_hidden', mut(SCOUTNV, {'hidden_size': 64}), expect=None, same_as='base_scout')
    run('w4_wrap_layer_kinds', mut(SCOUTNV, {'layer_kinds': {}}), expect=None)
    run('w4_tc_q', mut(SCOUTNV, {TC: mut(stc, {'quantization_config': {'quant_method': 'fp8'}})}),
        expect=2, field='model.text_config.quantization_config')
    run('w4_tc_orl', mut(SCOUTNV, {TC: mut(stc, {'output_router_logits': True})}), expect=2,
        field='model.text_config.output_router_logits')
    # errors inside text_config must be nested
    for tag, upd, fld in [
            ('E0', {'num_local_experts': 0}, 'model.text_config.num_local_experts'),
            ('ml_oob', {ML: [48]}, 'model.text_config.moe_layers[0]'),
            ('nr_short', {NR: [1]}, 'model.text_config.no_rope_layers'),
            ('nr_two', {NR: [2] * 48}, 'model.text_config.no_rope_layers'),
            ('step0', {'interleave_moe_layer_step': 0},
             'model.text_config.interleave_moe_layer_step'),
            ('nri0', {'no_rope_layer_interval': 0}, 'model.text_config.no_rope_layer_interval'),
            ('mlp0', {'intermediate_size_mlp': 0}, 'model.text_config.intermediate_size_mlp'),
            ('k0', {'num_experts_per_tok': 0}, 'model.text_config.num_experts_per_tok'),
            ('k17', {'num_experts_per_tok': 17}, 'model.text_config.num_experts_per_tok'),
            ('kv3', {'num_key_value_heads': 3}, 'model.text_config.num_key_value_heads'),
            ('kv80', {'num_key_value_heads': 80}, 'model.text_config.num_key_value_heads'),
            ('L100000', {'num_hidden_layers': 100000}, 'model.text_config.num_hidden_layers'),
            ('L2p40', {'num_hidden_layers': 2 ** 40}, 'model.text_config.num_hidden_layers'),
            ('h2p41', {'hidden_size': 2 ** 41}, 'model.text_config.hidden_size'),
            ('V2p41', {'vocab_size': 2 ** 41}, 'model.text_config.vocab_size'),
            ('hd2p41', {'head_dim': 2 ** 41}, 'model.text_config.head_dim'),
            ('heads_huge', {'num_attention_heads': 2 ** 41},
             'model.text_config.num_attention_heads'),
            ('layer_stack', {'layer_stack': []}, 'model.text_config.layer_stack'),
            ('num_experts', {'num_experts': 16}, 'model.text_config.num_experts'),
            ('unknown_ok', {'zzz': 1}, None),
            ('use_qk_str', {'use_qk_norm': 'yes'}, 'model.text_config.use_qk_norm'),
            ('act', {'hidden_act': 'relu'}, 'model.text_config.hidden_act'),
            ('drop', {'attention_dropout': 2}, 'model.text_config.attention_dropout'),
            ('ml_nan', {ML: '__NAN__'}, 'model.text_config.moe_layers'),
    ]:
        o = mut(SCOUTNV, {TC: mut(stc, upd)})
        text = json.dumps(o).replace('"__NAN__"', 'NaN')
        run(f'w4_err_{tag}', text, expect=0 if tag == 'unknown_ok' else 2, field=fld)
    for tag, upd, fld in [
            ('swp0', {'sliding_window_pattern': 0}, 'model.text_config.sliding_window_pattern'),
            ('lt_bad', {'layer_types': ['x'] * 26}, 'model.text_config.layer_types'),
            ('kv3', {'num_key_value_heads': 3}, 'model.text_config.num_key_value_heads'),
            ('L2p40', {'num_hidden_layers': 2 ** 40}, 'model.text_config.num_hidden_layers'),
            ('hd0', {'head_dim': 0}, 'model.text_config.head_dim'),
            ('V0', {'vocab_size': 0}, 'model.text_config.vocab_size'),
            ('softcap_neg', {'final_logit_softcapping': -1},
             'model.text_config.final_logit_softcapping'),
            ('hact_conflict', {'hidden_act': 'silu'}, 'model.text_config.hidden_activation'),
    ]:
        run(f'wg3_err_{tag}', mut(G3W, {TC: mut(G1B, upd)}), expect=2, field=fld)
    # CLI on wrappers (validation errors after reading)
    run('w4_tp3', SCOUTNV, args=ARGS + ['--tp', '3'], expect=2, field='config.tp')
    run('w4_tp8', SCOUTNV, args=ARGS + ['--tp', '8'], expect=0)
    run('w4_tp16', SCOUTNV, args=ARGS + ['--tp', '16'], expect=None)
    run('w4_ep16_dp16', SCOUTNV, args=ARGS + ['--ep', '16', '--dp', '16'], expect=0)
    run('w4_ep3', SCOUTNV, args=ARGS + ['--ep', '3', '--dp', '3'], expect=2, field='config.ep')
    run('w4_pp5', SCOUTNV, args=ARGS + ['--pp', '5'], expect=2, field='config.pp')
    run('w4_hf_sdpa', SCOUTNV, args=ARGS + ['--profile', 'hf', '--attention', 'sdpa_math'],
        expect=0)
    run('w4_timeline', SCOUTNV, cmd='timeline', expect=0)
    run('w4_plan', SCOUTNV, cmd='plan', args=ARGS + ['--gpu', 'h200-141gb'], expect=0)
    run('wg3_tp2', G3W, args=ARGS + ['--tp', '2'], expect=None)
    run('wg3_tp4', G3W, args=ARGS + ['--tp', '4'], expect=None)
    run('wg3_ep2', G3W, args=ARGS + ['--ep', '2', '--dp', '2'], expect=2, field='config.ep')
    run('wg3_timeline', G3W, cmd='timeline', expect=0)
    run('wg3_plan', G3W, cmd='plan', args=ARGS + ['--gpu', 'h100-80gb'], expect=0)
    run('wg3_hf_sdpa', G3W, args=ARGS + ['--profile', 'hf', '--attention', 'sdpa_math'],
        expect=0)
    run('wg3_in_w4', mut(SCOUTNV, {TC: G1B}), expect=2, field='model.text_config.model_type')
    run('w4_in_wg3', mut(G3W, {TC: stc}), expect=2, field='model.text_config.model_type')

    # ------------------------------------------------------------ JSON-text attacks
    t = json.dumps(GO)
    run('dup_E', t[:-1] + ', "num_local_experts": 16}', expect=2,
        field='model.num_local_experts')
    run('dup_mt', '{"model_type":"llama","model_type":"gpt_oss"' + json.dumps(GO)[23:],
        expect=2)
    run('dup_tc', json.dumps(SCOUTNV)[:-1] + ', "text_config": {}}', expect=2)
    run('dup_in_tc', json.dumps(SCOUTNV).replace('"use_qk_norm": true',
                                                  '"use_qk_norm": true, "use_qk_norm": false'),
        expect=2)
    run('dup_ml', json.dumps(mut(L4, {ML: [1, 3]}))[:-1] + ', "moe_layers": [0]}', expect=2)
    run('dup_escaped_key', t[:-1] + ', "num_local_\\u0065xperts": 16}', expect=2,
        note='same key, one spelled with a \\u escape')
    run('bom', '\ufeff' + t, expect=None)
    run('trailing_garbage', t + 'x', expect=2, field='model')
    run('two_objects', t + t, expect=2, field='model')
    run('invalid_utf8_val', t[:-1].encode() + b', "rope_type": "\xff\xfe"}', expect=2)
    run('invalid_utf8_key', t[:-1].encode() + b', "\xc3\x28": 1}', expect=2)
    run('lone_surrogate', t[:-1] + ', "x": "\\ud800"}', expect=None)
    run('nul_in_key', t[:-1] + ', "a\\u0000b": 1}', expect=None)
    run('ctrl_key', mut(GO, {'\x1b[2J\x1b[31mevil\n': 1}), expect=None)
    run('ctrl_key_strict', {'hidden_size': 4, 'evil\x1b[31m\r\nkey': 1}, expect=2)
    run('ctrl_mt', mut(GO, {'model_type': 'gpt_oss\n\x1b[31m'}), expect=2,
        field='model.model_type')
    run('long_mt', mut(GO, {'model_type': 'g' * 1000000}), expect=2, field='model.model_type')
    run('long_key_hf', mut(GO, {'k' * 100000: 1}), expect=None)
    run('long_key_strict', {'hidden_size': 4, 'k' * 100000: 1}, expect=2)
    run('unicode_key', mut(GO, {'num_lоcal_experts': 16}), expect=None, same_as='base_go',
        note='Cyrillic o: unknown key warning')
    run('unicode_mt', mut(GO, {'model_type': 'gpt_oss\u200b'}), expect=2,
        field='model.model_type')
    run('rtl_value', mut(GO, {'hidden_act': '\u202esilu'}), expect=2, field='model.hidden_act')
    run('emoji_lt', mut(GO, {'layer_types': ['😀', 'full_attention']}), expect=2,
        field='model.layer_types')
    run('nan_top_E', raw_set(GO, 'num_local_experts', 'NaN'), expect=2,
        field='model.num_local_experts')
    run('nan_lower', raw_set(GO, 'num_local_experts', 'nan'), expect=2, field='model')
    run('inf_lower', raw_set(GO, 'num_local_experts', 'inf'), expect=2, field='model')
    run('plus_inf', raw_set(GO, 'num_local_experts', '+Infinity'), expect=2, field='model')
    run('nan_ept', raw_set(GO, 'experts_per_token', 'NaN'), expect=2,
        field='model.experts_per_token')
    run('nan_string_lt', mut(GO, {'layer_types': ['NaN', 'NaN']}), expect=2,
        field='model.layer_types')
    run('nan_both_ept', raw_set(mut(GO, {'num_experts_per_tok': '__X__'}), 'experts_per_token',
                                'NaN').replace('"__X__"', 'NaN'), expect=2,
        field='model.num_experts_per_tok')
    run('nan_tie_wrapper', json.dumps(mut(SCOUTNV, {'tie_word_embeddings': '__X__',
                                                    TC: mut(stc, {'tie_word_embeddings': '__X__'})}
                                          )).replace('"__X__"', 'NaN'), expect=2,
        field='model.tie_word_embeddings')
    run('str_NaN_hidden_act', mut(GO, {'hidden_act': 'NaN'}), expect=2, field='model.hidden_act')
    run('big_file', mut(GO, {'notes_blob': 'x' * (17 << 20)}), expect=2, field='model')
    run('many_values', mut(GO, {'blob': [0] * 300000}), expect=2, field='model')
    run('deep_64', mut(GO, {'rope_scaling': json.loads('[' * 62 + ']' * 62)}), expect=None)
    run('deep_65', mut(GO, {'rope_scaling': json.loads('[' * 70 + ']' * 70)}), expect=2,
        field='model')
    run('empty_file', '', expect=2, field='model')
    run('ws_file', '   \n\t ', expect=2, field='model')
    run('top_array', [GO], expect=2, field='model')
    run('top_null', 'null', expect=2, field='model')
    run('comment', '// c\n' + t, expect=2, field='model')
    run('num_E_exp', t.replace('"num_local_experts": 8', '"num_local_experts": 8e0'), expect=0,
        same_as='base_go')
    run('num_E_frac_tiny', t.replace('"num_local_experts": 8', '"num_local_experts": 8.0000000001'),
        expect=2, field='model.num_local_experts')
    run('num_E_8e-0', t.replace('"num_local_experts": 8', '"num_local_experts": 80e-1'),
        expect=0, same_as='base_go')
    run('num_E_leading0', t.replace('"num_local_experts": 8', '"num_local_experts": 08'),
        expect=2, field='model')
    run('num_E_neg0', t.replace('"num_local_experts": 8', '"num_local_experts": -0'),
        expect=2, field='model.num_local_experts')
    run('num_E_1e19', t.replace('"num_local_experts": 8', '"num_local_experts": 1e19'),
        expect=2, field='model.num_local_experts')
    run('num_k_2p64m1', t.replace('"num_experts_per_tok": 2',
                                  '"num_experts_per_tok": 18446744073709551615'),
        expect=2, field='model.num_experts_per_tok')
    run('num_E_2p64m1', t.replace('"num_local_experts": 8',
                                  '"num_local_experts": 18446744073709551615'),
        expect=2, field='model.num_local_experts')
    run('no_model_type_gpt_oss_keys', mut(GO, drop=('model_type',)), expect=2)
    run('mt_case', mut(GO, {'model_type': 'GPT_OSS'}), expect=2, field='model.model_type')
    run('mt_dash', mut(GO, {'model_type': 'gpt-oss'}), expect=2, field='model.model_type')
    run('mt_llama4_nowrap', mut(L4, {'model_type': 'llama4'}), expect=2,
        field='model.text_config')
    run('mt_gemma3_text_tc', mut(G1B, {'text_config': G1B}), expect=0, same_as='base_g1b')

    # ------------------------------------------------------------ family rules via layer_kinds
    def kinds(base, kind, n):
        return mut(base, {'layer_kinds': {'k': kind}, 'layer_stack': [{'kind': 'k', 'repeat': n}]})
    run('go_kind_nosinks', kinds(GO, {'attn_sinks': False}, 2), expect=2,
        field='model.layer_kinds.k.attn_sinks', note='top-level attn_sinks false is refused')
    run('go_kind_nosinks_hf_sdpa', kinds(GO, {'attn_sinks': False}, 2),
        args=ARGS + ['--profile', 'hf', '--attention', 'sdpa_math'], expect=2)
    run('go_kind_mlp_bias_false', kinds(GO, {'mlp_bias': False}, 2), expect=2,
        field='model.layer_kinds.k.mlp_bias', note='top-level mlp_bias is refused for gpt_oss')
    run('go_kind_dense', kinds(GO, {'num_local_experts': 0}, 2), expect=2,
        field='model.layer_kinds.k.num_local_experts', note='gpt-oss: every layer is sparse')
    run('go_kind_shared', kinds(GO, {'num_shared_experts': 1}, 2), expect=2,
        field='model.layer_kinds.k.num_shared_experts')
    run('go_kind_moe_inter', kinds(GO, {'moe_intermediate_size': 128}, 2), expect=2,
        field='model.layer_kinds.k.moe_intermediate_size')
    run('pm_kind_k1', kinds(PM, {'num_experts_per_tok': 1}, 2), expect=2,
        field='model.layer_kinds.k.num_experts_per_tok', note='top-level k != 2 is refused')
    run('pm_kind_k1_hf', kinds(PM, {'num_experts_per_tok': 1}, 2),
        args=ARGS + ['--profile', 'hf'], expect=2)
    run('pm_kind_mlp_bias', kinds(PM, {'mlp_bias': True}, 2), expect=2,
        field='model.layer_kinds.k.mlp_bias', note='top-level mlp_bias is refused for phimoe')
    run('pm_kind_shared', kinds(PM, {'num_shared_experts': 1}, 2), expect=2,
        field='model.layer_kinds.k.num_shared_experts')
    run('llama_ln_gemma_norm', {'model_type': 'llama', 'hidden_size': 256,
                                'num_attention_heads': 4, 'num_hidden_layers': 2,
                                'vocab_size': 1024, 'intermediate_size': 256,
                                'norm_type': 'layernorm', 'gemma_norm': True}, expect=2,
        field='model.gemma_norm', note='contrast for pm_gemma_norm')
    run('pm_gemma_norm_hf', mut(PM, {'gemma_norm': True}), args=ARGS + ['--profile', 'hf'],
        expect=2, field='model.gemma_norm')
    # wrapper errors through the other commands
    run('w4_tie_wrap_str_timeline', mut(SCOUTNV, {'tie_word_embeddings': 'yes'}),
        cmd='timeline', expect=2, field='model.tie_word_embeddings')
    run('w4_err_kv3_plan', mut(SCOUTNV, {TC: mut(stc, {'num_key_value_heads': 3})}), cmd='plan',
        args=ARGS + ['--gpu', 'h100-80gb'], expect=2, field='model.text_config.num_key_value_heads')
    run('w4_wrap_q_text', mut(SCOUTNV, {'quantization_config': {'quant_method': 'fp8'}}),
        expect=2, field='model.quantization_config', json_out=False)
    run('wg3_wrap_attn_impl', mut(G3W, {'_attn_implementation': 'eager'}), expect=2,
        field='model._attn_implementation')
    run('ctrl_key_text', mut(GO, {'\x1b[31mred\n': 1}), expect=0, json_out=False)

    save()
    bad = [r for r in results if r['flags']]
    print(f'\n{len(results)} cases, {len(bad)} flagged')
    for r in bad:
        print(r['name'], r['flags'], r['stderr_first'][:200])


if __name__ == '__main__':
    main()
