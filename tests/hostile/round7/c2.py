import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
B={"hidden_size":256,"num_attention_heads":4,"intermediate_size":1024,"num_hidden_layers":2,"vocab_size":1024,"norm_type":"layernorm","ffn_type":"gelu","block_layout":"parallel"}
def m(name, mod=None, drop=(), extra=(), expect=2, base=B, cmd='estimate', json_=True):
    o=copy.deepcopy(base)
    for k in drop: o.pop(k,None)
    if mod: o.update(mod)
    p=wf(name+'.json',o)
    return run(name,[cmd,'--model',p]+(['--json'] if json_ else [])+list(extra),expect=expect)
m('bl_parallel',expect=0)
m('bl_seq',{'block_layout':'sequential'},expect=0)
m('bl_p2n',{'block_layout':'parallel_two_norms'},expect=0)
for v in ['Parallel','parallel ','', None, 1, True, ['parallel'], 'parallel_three_norms','x'*3000,'par\u0000allel','\u00e9\ud7ff']:
    m(f'bl_bad_{abs(hash(str(v)))%10000}',{'block_layout':v})
m('bl_rms',{'norm_type':'rmsnorm'},expect=0)
m('bl_swiglu',{'ffn_type':'swiglu'},expect=0)
M=dict(B); M.update({'num_local_experts':8,'num_experts_per_tok':2,'moe_intermediate_size':512})
m('bl_moe',base=M,expect=0)
m('bl_moe_p2n',{'block_layout':'parallel_two_norms'},base=M,expect=0)
m('bl_moe_shared',{'shared_expert_intermediate_size':512},base=M,expect=0)
m('bl_moe_cap',{'capacity_factor':1.25},base=M,expect=0)
for prof in ['megatron','textbook','pytorch','hf']:
  for att in ['eager','sdpa_math','flash']:
    for rc in ['none','selective','full','every:2']:
      for bl,base in [('parallel',B),('parallel_two_norms',B),('moeparallel',M)]:
        if bl=='parallel_two_norms' and rc in('every:2',): continue
        if bl=='moeparallel' and att=='sdpa_math': continue
        mod={'block_layout':bl} if bl!='moeparallel' else {}
        m(f'bl_{bl[:6]}_{prof}_{att}_{rc}',mod,base=base,extra=('--profile',prof,'--attention',att,'--recompute',rc),expect=0)
# custom keep: find ids
m('bl_custom_none',extra=('--recompute','custom'),expect=None)
m('bl_custom_bogus',extra=('--recompute','custom','--custom-keep','nonexistent.x'))
m('bl_tp2_sp',extra=('--tp','2','--sp'),expect=0)
m('bl_tp4_sp_cp2_pp2',extra=('--tp','4','--sp','--cp','2','--pp','2'),expect=0)
m('bl_moe_tp2_ep2',base=M,extra=('--tp','2','--ep','2','--dp','2','--sp'),expect=0)
m('bl_moe_ep4_pp2_cp2',base=M,extra=('--ep','4','--dp','4','--pp','2','--cp','2'),expect=0)
m('bl_timeline',cmd='timeline',expect=0,json_=True)
m('bl_plan',cmd='plan',extra=('--gpu','h100-80gb'),expect=0)
m('bl_fit',cmd='fit',extra=('--gpu','h100-80gb'),expect=0)
m('bl_sweep',cmd='sweep',extra=('--sweep-micro-batches','1,2,4','--sweep-seqs','128,4096'),expect=0)
m('bl_explain',cmd='explain',expect=0,json_=False)
# layer kinds with block_layout
LK=dict(B); LK.update({'layer_kinds':{'seq':{'block_layout':'sequential'}},'layer_stack':['base','seq']})
m('bl_lk',base=LK,expect=None)
LK2=dict(B); LK2.update({'layer_kinds':{'p2':{'block_layout':'bogus'}},'layer_stack':['base','p2']})
m('bl_lk_bad',base=LK2)
m('bl_with_model_type_llama',{'model_type':'llama'},expect=None)
save('/tmp/hostile7/r2.json')
