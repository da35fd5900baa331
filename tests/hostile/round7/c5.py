import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
DS=json.load(open('/work/main/tests/data/hf/deepseek-v3.config.json'))
S=copy.deepcopy(DS); S.update({'hidden_size':64,'num_hidden_layers':2,'num_attention_heads':2,'num_key_value_heads':2,'intermediate_size':128,'moe_intermediate_size':32,'n_routed_experts':4,'num_experts_per_tok':2,'n_group':2,'topk_group':1,'first_k_dense_replace':1,'q_lora_rank':32,'kv_lora_rank':16,'qk_nope_head_dim':16,'qk_rope_head_dim':8,'v_head_dim':16,'vocab_size':128,'num_nextn_predict_layers':1})
S.pop('quantization_config'); S.pop('auto_map')
Sd=copy.deepcopy(S); Sd.update({'n_routed_experts':None,'first_k_dense_replace':0}); [Sd.pop(k) for k in ('num_experts_per_tok','moe_intermediate_size','n_shared_experts','n_group','topk_group','first_k_dense_replace')]
Sd_noq=copy.deepcopy(Sd); Sd_noq['q_lora_rank']=None
B={"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128,"norm_type":"layernorm","ffn_type":"gelu","block_layout":"parallel"}
M={"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128,"num_local_experts":4,"num_experts_per_tok":2}
F={"model_type":"falcon","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,"vocab_size":128}
F40={"model_type":"falcon","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_kv_heads":2,"new_decoder_architecture":True,"vocab_size":128}
Fseq={"model_type":"falcon","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,"vocab_size":128,"parallel_attn":False}
L={"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128}
MK={**L,"layer_kinds":{"moe":{"num_local_experts":4,"num_experts_per_tok":2}},"layer_stack":["base","moe"]}
cases=[('val_ds_moe',S,2),('val_ds_dense_mla',Sd,2),('val_ds_dense_mla_noq',Sd_noq,2),('val_parallel',B,2),('val_p2n',{**B,'block_layout':'parallel_two_norms'},2),
       ('val_moe',M,2),('val_moe_layerkind',MK,2),('val_falcon7',F,2),('val_falcon40',F40,2),('val_falcon_seq',Fseq,None),('val_falcon_nln1',{**F40,'num_ln_in_parallel_attn':1},2),('val_seq_ok',L,0),
       ('val_moe_cap',{**M,'capacity_factor':1.0},2),('val_moe_shared',{**M,'shared_expert_intermediate_size':64},2)]
for n,o,e in cases:
    p=wf(n+'.json',o)
    run(n,['--executor','cpu','--model',p,'--seq','16','--json'],exe=V,expect=e)
run('val_ds_preset',['--executor','cpu','--preset','deepseek-v3','--seq','16'],exe=V,expect=2)
run('val_falcon_preset',['--executor','cpu','--preset','falcon-7b','--seq','16'],exe=V,expect=2)
run('val_mixtral_preset',['--executor','cpu','--preset','mixtral-8x7b','--seq','16'],exe=V,expect=2)
run('val_mtp',['--executor','cpu','--model',wf('val_ds_moe.json',S),'--mtp','--seq','16'],exe=V,expect=2)
run('val_imb',['--executor','cpu','--model',wf('val_moe.json',M),'--moe-imbalance','2','--ep','2','--dp','2','--seq','16'],exe=V,expect=2)
run('val_cuda_parallel',['--executor','cuda','--model',wf('val_parallel.json',B),'--seq','16'],exe=V,expect=2)
run('val_cuda_seq',['--executor','cuda','--model',wf('val_seq_ok.json',L),'--seq','16'],exe=V,expect=None)
run('val_noexec',['--model',wf('val_parallel.json',B)],exe=V,expect=2)
run('val_bad_exec',['--executor','tpu','--model',wf('val_parallel.json',B)],exe=V,expect=2)
run('val_seed_neg',['--executor','cpu','--seed','-1','--model',wf('val_seq_ok.json',L),'--seq','16'],exe=V,expect=None)
run('val_fdprobes_huge',['--executor','cpu','--fd-probes','1000000000','--model',wf('val_seq_ok.json',L),'--seq','16'],exe=V,expect=None)
run('val_seq_huge',['--executor','cpu','--model',wf('val_seq_ok.json',L),'--seq','1048576'],exe=V,expect=None)
run('val_mb_huge',['--executor','cpu','--model',wf('val_seq_ok.json',L),'--micro-batch','1000000','--seq','64'],exe=V,expect=None)
run('val_big_model',['--executor','cpu','--preset','llama-2-70b','--seq','16'],exe=V,expect=None)
run('val_ref_bad',['--executor','cpu','--reference','maybe','--model',wf('val_seq_ok.json',L),'--seq','16'],exe=V,expect=2)
save('/tmp/hostile7/r5.json')
