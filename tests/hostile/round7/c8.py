import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
D='/tmp/hostile7/f/'
S=D+'ds_small.json'   # 6-layer small deepseek, has quantization_config
S2=wf('s2.json',{**json.load(open(D+'s.json')),'num_nextn_predict_layers':2})
P=D+'bl_parallel.json'; M=D+'bl_moe.json'; F40=D+'f40.json'
for k in ['0','-1','7','9223372036854775807','18446744073709551616','1.5','','x','2,3']:
    run(f'every_{k[:8]}',['estimate','--model',S2,'--recompute','every:'+k,'--json'],expect=None)
for k in ['selective','full','every:3']:
    run(f'mtp_vpp_{k}',['estimate','--model',S2,'--mtp','--pp','2','--vpp','3','--recompute',k,'--json'],expect=0)
    run(f'mtp_gpipe_{k}',['estimate','--model',S2,'--mtp','--pp','3','--schedule','gpipe','--recompute',k,'--json'],expect=0)
run('mtp_csv',['timeline','--model',S2,'--mtp','--pp','2','--csv'],expect=0)
run('mtp_offload',['estimate','--model',S2,'--mtp','--offload','--recompute','full','--json'],expect=0)
run('ds_fp8',['estimate','--model',S2,'--dtype','fp8','--param-dtype','fp8','--json'],expect=None)
run('ds_fp32',['estimate','--model',S2,'--dtype','fp32','--json'],expect=0)
run('ds_cp_flash_sp',['estimate','--model',S2,'--tp','2','--sp','--cp','4','--seq','8192','--attention','flash','--json'],expect=0)
run('ds_sp_seq_notdiv',['estimate','--model',S2,'--tp','8','--sp','--seq','1001','--json'])
run('ds_imb_ep_no_dp',['estimate','--model',S2,'--ep','2','--moe-imbalance','1.5','--json'])
run('ds_imb_tp_ep',['estimate','--model',S2,'--tp','2','--sp','--ep','4','--dp','4','--moe-imbalance','4','--mtp','--json'],expect=0)
run('ds_imb_fit',['fit','--model',S2,'--ep','4','--dp','4','--moe-imbalance','3','--mtp','--gpu','rtx-4090','--json'],expect=0)
run('ds_imb_plan',['plan','--model',S2,'--ep','4','--dp','4','--moe-imbalance','3','--mtp','--gpu-memory','100MiB','--json'],expect=0)
run('ds_imb_sweep',['sweep','--model',S2,'--ep','4','--dp','4','--moe-imbalance','3','--mtp','--sweep-micro-batches','1,1048576','--sweep-seqs','1024,1073741824','--json'],expect=None)
run('ds_big_sweep',['sweep','--preset','deepseek-v3','--sweep-micro-batches','1,1024,1048576','--sweep-seqs','1024,1048576,1073741824','--json'],expect=None)
run('ds_big_fit',['fit','--preset','deepseek-v3','--gpu-memory','1000000000TiB','--json'],expect=None)
run('ds_big_fit_mtp',['fit','--preset','deepseek-v3','--mtp','--ep','8','--dp','8','--moe-imbalance','8','--gpu-memory','1000000000TiB','--json'],expect=None)
run('ds_big_plan',['plan','--preset','deepseek-v3','--mtp','--micro-batch','1024','--seq','1048576','--gpu','b200','--json'],expect=None)
run('ds_big_timeline',['timeline','--preset','deepseek-v3','--mtp','--micro-batch','65536','--seq','65536','--json'],expect=None)
run('ds_big_imb',['estimate','--preset','deepseek-v3','--ep','256','--dp','256','--moe-imbalance','256','--micro-batch','1048576','--seq','65536','--json'],expect=None)
run('ds_big_imb2',['estimate','--preset','deepseek-v3','--ep','256','--dp','256','--moe-imbalance','256','--micro-batch','8192','--seq','65536','--attention','flash','--recompute','full','--json'],expect=None)
run('ds_preset_custom',['estimate','--preset','deepseek-v3','--recompute','custom','--custom-keep','attn.q_latent_norm.in,moe.expert_in','--json'],expect=None)
run('ds_preset_custom_bad',['estimate','--preset','deepseek-v3','--recompute','custom','--custom-keep','moe.zzz','--json'])
run('ds_preset_custom_empty',['estimate','--preset','deepseek-v3','--recompute','custom','--custom-keep','','--json'],expect=None)
for prof in ['megatron','textbook','pytorch','hf']:
  for att in ['eager','sdpa_math','flash']:
    run(f'par_moe_tp_{prof}_{att}',['estimate','--model',M,'--profile',prof,'--attention',att,'--tp','2','--sp','--ep','2','--dp','2','--moe-imbalance','2','--recompute','selective','--json'],expect=0)
    run(f'f40_cp_{prof}_{att}',['timeline','--model',F40,'--profile',prof,'--attention',att,'--tp','8','--cp','2','--pp','4','--recompute','every:3','--json'],expect=0)
run('par_custom',['estimate','--model',P,'--recompute','custom','--custom-keep','ln1.in,mlp.act_in','--json'],expect=0)
run('par_custom_ln2',['estimate','--model',P,'--recompute','custom','--custom-keep','ln2.in','--json'],expect=2,note='parallel has no ln2')
run('par_dropout',['estimate','--model',P,'--dropout','0.1','--json'],expect=0)
run('par_dropout_hf',['estimate','--model',P,'--hidden-dropout','0.1','--profile','hf','--json'],expect=0)
run('f7_dropout',['estimate','--preset','falcon-7b','--hidden-dropout','0.1','--json'],expect=None)
run('f7_tp71_sp',['estimate','--preset','falcon-7b','--tp','71','--sp','--seq','2059','--json'],expect=None)
run('f7_zero_dp',['estimate','--preset','falcon-7b','--zero','3','--dp','1024','--json'],expect=0)
save('/tmp/hostile7/r8.json')
