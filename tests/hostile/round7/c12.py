import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
S=json.load(open('/tmp/hostile7/f/s.json'))
o={**S,'qk_nope_head_dim':2**64-32,'qk_rope_head_dim':64,'v_head_dim':64}
p=wf('ds_wrap_both.json',o)
run('ds_wrap_both',['estimate','--model',p,'--json'],expect=2)
run('ds_wrap_both_timeline',['timeline','--model',p,'--json'],expect=2)
run('ds_wrap_both_fit',['fit','--model',p,'--gpu','h100-80gb','--json'],expect=2)
run('ds_wrap_both_req',['requests','-'],stdin=json.dumps({"command":"view","model":o})+'\n',expect=None)
run('ds_wrap_validate',['--executor','cpu','--model',p,'--seq','16'],exe=V,expect=2)
o2={**S,'qk_nope_head_dim':2**64-1,'qk_rope_head_dim':65,'first_k_dense_replace':6}
run('ds_wrap_dense',['estimate','--model',wf('ds_wrap_dense.json',o2),'--json'],expect=2)
run('imb_prec',['estimate','--model',wf('s.json',S),'--ep','4','--dp','4','--moe-imbalance','4.0000001'],expect=2)
run('imb_prec2',['estimate','--model',wf('s.json',S),'--ep','4','--dp','4','--moe-imbalance','0.99999999'],expect=2)
save('/tmp/hostile7/r12.json')
