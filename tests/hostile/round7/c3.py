import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
DS=json.load(open('/work/main/tests/data/hf/deepseek-v3.config.json'))
# small deepseek for speed
S=copy.deepcopy(DS); S.update({'hidden_size':512,'num_hidden_layers':6,'num_attention_heads':8,'num_key_value_heads':8,'intermediate_size':1024,'moe_intermediate_size':128,'n_routed_experts':16,'num_experts_per_tok':4,'n_group':4,'topk_group':2,'first_k_dense_replace':1,'q_lora_rank':256,'kv_lora_rank':128,'qk_nope_head_dim':32,'qk_rope_head_dim':16,'v_head_dim':32,'vocab_size':4096})
def d(name, mod=None, drop=(), extra=(), expect=2, base=S, cmd='estimate', note=''):
    o=copy.deepcopy(base)
    for k in drop: o.pop(k,None)
    if mod: o.update(mod)
    p=wf(name+'.json',o)
    return run(name,[cmd,'--model',p,'--json',*extra],expect=expect,note=note)
d('ds_valid_full',base=DS,expect=0)
d('ds_small',expect=0)
d('ds_v2',{'model_type':'deepseek_v2','scoring_func':'softmax','topk_method':'greedy'},drop=('n_group','topk_group'),expect=0)
d('ds_v2_v3router',{'model_type':'deepseek_v2'},expect=None)
d('ds_qlora_null',{'q_lora_rank':None},expect=0)
d('ds_nre_null',{'n_routed_experts':None},expect=0)
for k in ['q_lora_rank','kv_lora_rank','qk_nope_head_dim','qk_rope_head_dim','v_head_dim','moe_intermediate_size','n_shared_experts','num_experts_per_tok','n_routed_experts']:
    for v in [0,-1,2**40,2**62,1.5,'8',True]:
        d(f'ds_{k}_{str(v)[:6]}',{k:v},expect=None)
for k in ['kv_lora_rank','qk_nope_head_dim','qk_rope_head_dim','v_head_dim']:
    d(f'ds_{k}_null',{k:None})
d('ds_nope0_rope16',{'qk_nope_head_dim':0},expect=None)
d('ds_rope0',{'qk_rope_head_dim':0},expect=None)
d('ds_fkdr_gt',{'first_k_dense_replace':10},expect=None,note='fkdr>layers')
d('ds_fkdr_eq',{'first_k_dense_replace':6},expect=None)
d('ds_fkdr_neg',{'first_k_dense_replace':-1})
d('ds_fkdr_0',{'first_k_dense_replace':0},expect=0)
d('ds_fkdr_null',{'first_k_dense_replace':None})
d('ds_fkdr_huge',{'first_k_dense_replace':2**62},expect=None)
d('ds_ngroup_notdiv',{'n_group':3})
d('ds_topk_gt_ngroup',{'topk_group':5})
d('ds_topk_group0',{'topk_group':0})
d('ds_ngroup0',{'n_group':0})
d('ds_ngroup_null',{'n_group':None},expect=None)
d('ds_k_gt_E',{'num_experts_per_tok':17})
d('ds_k_gt_groupcap',{'num_experts_per_tok':10,'topk_group':2},note='k > topk_group*E/n_group=8')
d('ds_ntp_str',{'norm_topk_prob':'true'})
d('ds_ntp_null',{'norm_topk_prob':None})
d('ds_score_softmax_v3',{'scoring_func':'softmax'})
d('ds_score_null',{'scoring_func':None})
d('ds_topkm_bad',{'topk_method':'group_limited_greedy'})
d('ds_mlf_2',{'moe_layer_freq':2})
d('ds_mlf_0',{'moe_layer_freq':0})
d('ds_mlf_str',{'moe_layer_freq':'1'})
d('ds_q_other',{'quantization_config':{'quant_method':'gptq','bits':4}})
d('ds_q_null',{'quantization_config':None},expect=None)
d('ds_q_str',{'quantization_config':'fp8'})
d('ds_q_fp8_e5m2',{'quantization_config':{'quant_method':'fp8','fmt':'e5m2','activation_scheme':'dynamic','weight_block_size':[128,128]}},expect=None)
d('ds_q_fp8_noblock',{'quantization_config':{'quant_method':'fp8'}},expect=None)
d('ds_head_dim',{'head_dim':64})
d('ds_kvh_ne',{'num_key_value_heads':1})
d('ds_kvh_missing',drop=('num_key_value_heads',),expect=None)
d('ds_missing_kvlora',drop=('kv_lora_rank',))
d('ds_missing_qlora',drop=('q_lora_rank',))
d('ds_missing_nre',drop=('n_routed_experts',))
d('ds_missing_fkdr',drop=('first_k_dense_replace',))
d('ds_missing_ngroup',drop=('n_group',))
d('ds_num_local_experts',{'num_local_experts':8})
d('ds_num_experts',{'num_experts':8})
d('ds_shared_expert_is',{'shared_expert_intermediate_size':256})
d('ds_layer_kinds',{'layer_kinds':{'x':{}},'layer_stack':['base']})
d('ds_nre_null_with_k',{'n_routed_experts':None,'num_experts_per_tok':4},expect=None)
d('ds_nre_null_fkdr',{'n_routed_experts':None,'first_k_dense_replace':100},expect=None)
d('ds_ep_size',{'ep_size':'abc'},expect=None)
d('ds_rsf_nan',{'routed_scaling_factor':'NaN'},expect=None)
# parallel configs
for ex in [('--tp','8'),('--tp','8','--sp'),('--tp','3'),('--ep','4','--dp','4'),('--ep','16','--dp','16'),('--ep','32','--dp','32'),('--ep','3','--dp','3'),('--ep','4','--dp','2'),
           ('--cp','4','--seq','8192'),('--cp','3'),('--pp','2'),('--pp','4'),('--pp','3'),('--pp','2','--vpp','3','--grad-accum','4'),('--pp','5'),('--pp','6'),('--pp','7'),
           ('--tp','2','--sp','--cp','2','--pp','2','--ep','2','--dp','2'),('--pp','2','--layer-split','1,5'),('--pp','2','--layer-split','0,6'),('--pp','2','--layer-split','3,4')]:
    d('ds_par_'+'_'.join(x.strip('-') for x in ex),extra=ex,expect=None)
for prof in ['megatron','textbook','pytorch','hf']:
  for att in ['eager','sdpa_math','flash']:
    for rc in ['none','selective','full','every:2']:
      d(f'ds_{prof}_{att}_{rc}',extra=('--profile',prof,'--attention',att,'--recompute',rc),expect=0)
for mb,seq in [('1','2147483648'),('4294967296','4294967296'),('65536','1048576'),('1','9223372036854775807'),('9223372036854775807','1'),('1','18446744073709551617'),('1','1e9'),('0','0')]:
    d(f'ds_big_{mb}_{seq}',extra=('--micro-batch',mb,'--seq',seq),expect=None)
d('ds_big_full',base=DS,extra=('--micro-batch','1024','--seq','1048576'),expect=None)
d('ds_big_full_flash',base=DS,extra=('--micro-batch','1048576','--seq','1048576','--attention','flash'),expect=None)
for cmd,ex in [('timeline',()),('timeline',('--pp','2')),('plan',('--gpu','h100-80gb')),('fit',('--gpu','h100-80gb')),('fit',('--gpu-memory','1TiB')),('fit',('--gpu-memory','1000000TiB')),('sweep',('--sweep-micro-batches','1,2,4','--sweep-seqs','1024,2048')),('sweep',('--sweep-micro-batches','1,4294967296','--sweep-seqs','4294967296'))]:
    d(f'ds_cmd_{cmd}_{len(ex)}_{ex[-1][:6] if ex else ""}',cmd=cmd,extra=ex,expect=None)
for cmd,ex in [('timeline',()),('plan',('--gpu','h200-141gb')),('fit',('--gpu','b200')),('sweep',('--sweep-micro-batches','1,2','--sweep-seqs','4096'))]:
    run(f'ds_preset_{cmd}',[cmd,'--preset','deepseek-v3','--json',*ex,'--tp','8','--ep','8','--dp','8','--pp','4'],expect=None)
save('/tmp/hostile7/r3.json')
