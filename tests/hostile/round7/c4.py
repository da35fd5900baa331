import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
DS=json.load(open('/work/main/tests/data/hf/deepseek-v3.config.json'))
S=copy.deepcopy(DS); S.update({'hidden_size':512,'num_hidden_layers':6,'num_attention_heads':8,'num_key_value_heads':8,'intermediate_size':1024,'moe_intermediate_size':128,'n_routed_experts':16,'num_experts_per_tok':4,'n_group':4,'topk_group':2,'first_k_dense_replace':1,'q_lora_rank':256,'kv_lora_rank':128,'qk_nope_head_dim':32,'qk_rope_head_dim':16,'v_head_dim':32,'vocab_size':4096})
S.pop('quantization_config'); S.pop('auto_map')
def d(name, mod=None, drop=(), extra=(), expect=2, base=S, cmd='estimate', note=''):
    o=copy.deepcopy(base)
    for k in drop: o.pop(k,None)
    if mod: o.update(mod)
    p=wf(name+'.json',o)
    return run(name,[cmd,'--model',p,'--json',*extra],expect=expect,note=note)
d('ds_v2_ok',{'model_type':'deepseek_v2','scoring_func':'softmax','topk_method':'greedy','norm_topk_prob':False},drop=('n_group','topk_group'),expect=0)
d('ds_v2_ngroup',{'model_type':'deepseek_v2','scoring_func':'softmax','topk_method':'greedy'},expect=None)
d('ds_v2_defaults',{'model_type':'deepseek_v2'},drop=('n_group','topk_group','scoring_func','topk_method','norm_topk_prob'),expect=0)
d('ds_v2_mtp',{'model_type':'deepseek_v2'},drop=('n_group','topk_group','scoring_func','topk_method','norm_topk_prob'),extra=('--mtp',),expect=None)
# MTP
for n in [0,1,4,5,65536,10**12,-1,1.5,None,'1',True]:
    d(f'mtp_n{str(n)[:6]}_off',{'num_nextn_predict_layers':n},expect=None)
    d(f'mtp_n{str(n)[:6]}_on',{'num_nextn_predict_layers':n},extra=('--mtp',),expect=None)
d('mtp_missing_on',drop=('num_nextn_predict_layers',),extra=('--mtp',))
d('mtp_pp2',{'num_nextn_predict_layers':2},extra=('--mtp','--pp','2'),expect=0)
d('mtp_pp3_split',{'num_nextn_predict_layers':2},extra=('--mtp','--pp','3','--layer-split','1,1,4'),expect=0)
d('mtp_pp2_split_last1',{'num_nextn_predict_layers':4},extra=('--mtp','--pp','2','--layer-split','5,1'),expect=0)
d('mtp_pp6',{'num_nextn_predict_layers':4},extra=('--mtp','--pp','6'),expect=0)
d('mtp_pp2_vpp3',{'num_nextn_predict_layers':1},extra=('--mtp','--pp','2','--vpp','3','--grad-accum','4'),expect=0)
d('mtp_tp_sp_cp',{'num_nextn_predict_layers':1},extra=('--mtp','--tp','4','--sp','--cp','2'),expect=0)
d('mtp_ep',{'num_nextn_predict_layers':1},extra=('--mtp','--ep','4','--dp','4'),expect=0)
d('mtp_zero3',{'num_nextn_predict_layers':1},extra=('--mtp','--zero','3','--dp','8'),expect=0)
d('mtp_dense_fkdr_all',{'num_nextn_predict_layers':1,'first_k_dense_replace':100},extra=('--mtp',),expect=None)
d('mtp_nre_null',{'num_nextn_predict_layers':1,'n_routed_experts':None},drop=('num_experts_per_tok','moe_intermediate_size','n_shared_experts','n_group','topk_group'),extra=('--mtp',),expect=None)
for prof in ['megatron','textbook','pytorch','hf']:
  for rc in ['none','selective','full','every:3']:
    d(f'mtp_{prof}_{rc}',{'num_nextn_predict_layers':2},extra=('--mtp','--profile',prof,'--recompute',rc,'--pp','2'),expect=0)
for cmd,ex in [('timeline',('--pp','2')),('plan',('--gpu','h100-80gb','--pp','3')),('fit',('--gpu','h100-80gb')),('sweep',('--sweep-micro-batches','1,2','--sweep-seqs','1024,2048')),('explain',())]:
    d(f'mtp_cmd_{cmd}',{'num_nextn_predict_layers':2},cmd=cmd,extra=('--mtp',*ex),expect=0)
# mtp on non-deepseek models
run('mtp_llama_preset',['estimate','--preset','llama-2-7b','--mtp','--json'])
run('mtp_falcon_preset',['estimate','--preset','falcon-7b','--mtp','--json'])
run('mtp_ds_preset',['estimate','--preset','deepseek-v3','--mtp','--json'],expect=0)
run('mtp_ds_preset_pp',['estimate','--preset','deepseek-v3','--mtp','--json','--pp','2','--layer-split','30,31'],expect=0)
# moe_imbalance
for v in ['NaN','nan','Infinity','inf','-inf','1e308','-0','0','0.5','1','1.0','4','4.0000001','4.0000000000000001','5','abc','','1e-308','0x2','2.5','  2']:
    d(f'imb_{v}',extra=('--ep','4','--dp','4','--moe-imbalance',v),expect=None)
d('imb_ep1',extra=('--moe-imbalance','1.5'))
d('imb_ep1_exact1',extra=('--moe-imbalance','1'),expect=None)
d('imb_dense',{'n_routed_experts':None},drop=('num_experts_per_tok','moe_intermediate_size','n_shared_experts','n_group','topk_group'),extra=('--moe-imbalance','1.5'))
run('imb_llama',['estimate','--preset','llama-2-7b','--moe-imbalance','1.5','--json','--dp','2'])
run('imb_mixtral_ep2',['estimate','--preset','mixtral-8x7b','--moe-imbalance','2','--ep','2','--dp','2','--json'],expect=0)
run('imb_mixtral_ep8_8',['estimate','--preset','mixtral-8x7b','--moe-imbalance','8','--ep','8','--dp','8','--json'],expect=0)
run('imb_qwen3moe',['estimate','--preset','qwen3-30b-a3b','--moe-imbalance','3.7','--ep','4','--dp','8','--json'],expect=0)
B={"hidden_size":256,"num_attention_heads":4,"intermediate_size":1024,"num_hidden_layers":2,"vocab_size":1024,"num_local_experts":8,"num_experts_per_tok":2,"capacity_factor":1.25}
p=wf('imb_cap.json',B)
run('imb_cap',['estimate','--model',p,'--ep','2','--dp','2','--moe-imbalance','1.5','--json'])
run('imb_cap_1',['estimate','--model',p,'--ep','2','--dp','2','--moe-imbalance','1','--json'],expect=None)
MK={"hidden_size":256,"num_attention_heads":4,"intermediate_size":1024,"num_hidden_layers":4,"vocab_size":1024,
    "layer_kinds":{"moe":{"num_local_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":256},"moe4":{"num_local_experts":4,"num_experts_per_tok":1}},"layer_stack":["base","moe","moe4","moe"]}
p=wf('imb_mk.json',MK)
run('imb_mk_ep4',['estimate','--model',p,'--ep','4','--dp','4','--moe-imbalance','4','--json'],expect=0)
run('imb_mk_ep8',['estimate','--model',p,'--ep','8','--dp','8','--moe-imbalance','2','--json'],expect=None)
run('imb_mk_ep2_cap',['estimate','--model',wf('imb_mk2.json',{**MK,'layer_kinds':{"moe":{"num_local_experts":8,"num_experts_per_tok":2,"capacity_factor":1.0},"moe4":{"num_local_experts":4,"num_experts_per_tok":1}}}),'--ep','2','--dp','2','--moe-imbalance','2','--json'],expect=None,note='one kind has capacity factor, another dropless')
# config-file moe_imbalance types
for v in ['"2"',None,'true','[2]','1e400','NaN','-Infinity','2.0']:
    cf=wf(f'cfg_imb_{abs(hash(str(v)))%1000}.json','{"ep":4,"dp":4,"moe_imbalance":%s}'%('null' if v is None else v))
    run(f'cfgimb_{v}',['estimate','--model',wf('s.json',S),'--config',cf,'--json'],expect=None)
for v in ['"yes"','null','1','0','false','true']:
    cf=wf(f'cfg_mtp_{abs(hash(str(v)))%1000}.json','{"mtp":%s}'%v)
    run(f'cfgmtp_{v}',['estimate','--model',wf('s.json',S),'--config',cf,'--json'],expect=None)
run('cli_mtp_arg',['estimate','--model',wf('s.json',S),'--mtp','true','--json'],expect=None)
run('cli_mtp_twice',['estimate','--model',wf('s.json',S),'--mtp','--mtp','--json'],expect=None)
run('cli_imb_twice',['estimate','--model',wf('s.json',S),'--ep','2','--dp','2','--moe-imbalance','1.5','--moe-imbalance','2','--json'],expect=None)
run('cli_imb_noarg',['estimate','--model',wf('s.json',S),'--moe-imbalance'],expect=2)
save('/tmp/hostile7/r4.json')
