import sys, json, copy; sys.path.insert(0,'/tmp/hostile7')
from runner import *
S=json.load(open('/tmp/hostile7/f/s.json'))
def d(name, mod, extra=(), expect=2, drop=()):
    o={**S,**mod}
    for k in drop: o.pop(k,None)
    return run(name,['estimate','--model',wf(name+'.json',o),'--json',*extra],expect=expect)
d('ds_wrap_small',{'qk_nope_head_dim':2**64-1,'qk_rope_head_dim':65})
d('ds_wrap_small2',{'qk_nope_head_dim':2**63+32,'qk_rope_head_dim':2**63+32})
d('ds_wrap_small3',{'qk_nope_head_dim':18446744073709551552,'qk_rope_head_dim':128})
d('ds_v2_nre_max',{'model_type':'deepseek_v2','n_routed_experts':2**64-1,'scoring_func':'softmax','topk_method':'greedy','norm_topk_prob':False},drop=('n_group','topk_group'))
d('ds_v2_nre_2p62',{'model_type':'deepseek_v2','n_routed_experts':2**62,'scoring_func':'softmax','topk_method':'greedy','norm_topk_prob':False},drop=('n_group','topk_group'))
save('/tmp/hostile7/r11.json')
