import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
DS=json.load(open('/work/main/tests/data/hf/deepseek-v3.config.json'))
S=json.load(open('/tmp/hostile7/f/val_ds_moe.json'))
F=json.load(open('/work/main/tests/data/hf/falcon-7b-instruct.config.json'))
B={"hidden_size":256,"num_attention_heads":4,"intermediate_size":1024,"num_hidden_layers":2,"vocab_size":1024,"norm_type":"layernorm","ffn_type":"gelu","block_layout":"parallel"}
reqs=[
 ('rq_view_ds',{"command":"view","model":DS,"config":{"mtp":True,"tp":8,"ep":8,"dp":8,"moe_imbalance":3.5},"gpu":"h200-141gb"}),
 ('rq_view_ds_small',{"command":"view","model":S,"config":{"mtp":True,"ep":2,"dp":2,"moe_imbalance":2}}),
 ('rq_view_falcon',{"command":"view","model":F,"gpu":"h100-80gb"}),
 ('rq_view_parallel',{"command":"view","model":B,"gpu":"rtx-4090","stages":"all"}),
 ('rq_view_ds_preset',{"command":"view","preset":"deepseek-v3","config":{"mtp":True,"pp":2,"layer_split":[30,31]},"gpu":"b200"}),
 ('rq_timeline_ds',{"command":"timeline","model":S,"config":{"mtp":True,"pp":2},"events":"worst"}),
 ('rq_fit_ds',{"command":"fit","model":S,"config":{"mtp":True,"moe_imbalance":2,"ep":2,"dp":2},"gpu":"h100-80gb"}),
 ('rq_plan_falcon',{"command":"plan","model":F,"gpu":"a100-40gb"}),
 ('rq_sweep_par',{"command":"sweep","model":B,"sweep":{"micro_batches":[1,2],"seqs":[128,256]}}),
 ('rq_model_text_falcon',{"command":"estimate","model_text":json.dumps(F)}),
 ('rq_model_text_dupalias',{"command":"estimate","model_text":'{"model_type":"falcon","n_embed":64,"hidden_size":64,"n_layer":2,"num_attention_heads":2,"vocab_size":100}'}),
 ('rq_mtp_str',{"command":"estimate","model":S,"config":{"mtp":"true"}}),
 ('rq_imb_nan',{"command":"estimate","model":S,"config":{"moe_imbalance":"NaN","ep":2,"dp":2}}),
 ('rq_imb_str_num',{"command":"estimate","model":S,"config":{"moe_imbalance":"2","ep":2,"dp":2}}),
 ('rq_mtp_llama',{"command":"estimate","preset":"llama-2-7b","config":{"mtp":True}}),
 ('rq_bl_bad',{"command":"estimate","model":{**B,"block_layout":"zig"}}),
 ('rq_presets_mtp',{"command":"presets","config":{"mtp":True}}),
]
lines=[]
for n,r in reqs:
    s=json.dumps(r); lines.append(s)
    run(n,['requests','-'],stdin=s+'\n',expect=None)
run('rq_all',['requests','-'],stdin='\n'.join(lines)+'\n',expect=None)
run('rq_garbage',['requests','-'],stdin='{"command":"estimate","model":{"model_type":"falcon"\n',expect=None)
run('rq_empty_lines',['requests','-'],stdin='\n\n\n',expect=None)
run('rq_nul',['requests','-'],stdin='{"command":"estimate","preset":"falcon-7b"}\x00\n',expect=None)
run('rq_crlf',['requests','-'],stdin='{"command":"estimate","preset":"falcon-7b"}\r\n',expect=None)
big='{"command":"estimate","model":'+'['*100000+']'*100000+'}\n'
run('rq_deep',['requests','-'],stdin=big,expect=None)
run('rq_many',['requests','-'],stdin=('{"command":"view","model":%s,"config":{"mtp":true}}\n'%json.dumps(S))*200,expect=None)
save('/tmp/hostile7/r7.json')
