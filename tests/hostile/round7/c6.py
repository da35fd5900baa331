import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
S=json.load(open('/tmp/hostile7/f/val_ds_moe.json'))
run('val_ds_fkdr0',['--executor','cpu','--model',wf('val_ds_fkdr0.json',{**S,'first_k_dense_replace':0}),'--seq','16'],exe=V,expect=2)
run('val_ds_fkdr_all',['--executor','cpu','--model',wf('val_ds_fkdrall.json',{**S,'first_k_dense_replace':5}),'--seq','16'],exe=V,expect=2)
M={"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128,"num_local_experts":1,"num_experts_per_tok":1}
run('val_moe_E1',['--executor','cpu','--model',wf('val_moe_e1.json',M),'--seq','16'],exe=V,expect=2)
run('val_shared_only',['--executor','cpu','--model',wf('val_shared.json',{"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128,"shared_expert_intermediate_size":64}),'--seq','16'],exe=V,expect=None)
run('val_mla_schema',['--executor','cpu','--model',wf('val_mla_schema.json',{"hidden_size":64,"num_attention_heads":2,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":128,"kv_lora_rank":16}),'--seq','16'],exe=V,expect=2)
run('val_mtp_dense',['--executor','cpu','--model',wf('val_ds_fkdrall.json',{**S,'first_k_dense_replace':5}),'--mtp','--seq','16'],exe=V,expect=2)
save('/tmp/hostile7/r6.json')
