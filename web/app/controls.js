// The options panel: a control for every request key the engine reads beyond the form's own
// (framework, precision, float8, LoRA, recompute details, device), built from one table; each
// control shows the value the engine used when left empty (the answer's config, the framework's
// default named). The page test compares the engine's key list (presets' options.config_keys) with
// the controls' data-field and the keys named under "Not here".

// kind: 'choice' (the engine's option list `list`, or `values`; `numeric`: sent as a number), 'flag'
// (default / true / false), 'int', 'number', 'text', 'names' (comma-separated, sent as a list).
const OPTION_GROUPS = [
  { legend: 'Framework', rows: [
    { key: 'framework', label: 'framework', kind: 'choice', list: 'frameworks', tip: 'Fill every key left empty with the framework\'s own default, each cited in the answer (docs/frameworks.md). Default: plain (the schema\'s defaults).' },
    { key: 'optimizer_impl', label: 'AdamW implementation', kind: 'choice', list: 'optimizer_impls', tip: 'How AdamW steps: foreach holds the sqrt of every exp_avg_sq at once (one state\'s bytes), fused nothing, for-loop two copies of the largest tensor. Default: auto (fused for the megatron and textbook profiles, foreach for pytorch and hf).' },
    { key: 'shard_group', label: 'ZeRO / FSDP shard group', kind: 'choice', list: 'shard_groups', tip: 'The ranks ZeRO shards over: dp, or dp × cp (Megatron-LM\'s and torchtitan\'s). Default: dp.' },
    { key: 'dp_replicate', label: 'HSDP replicas', kind: 'int', tip: 'Data-parallel replicas of an FSDP shard group (HSDP): shards over dp / dp_replicate. Default: 1.' },
    { key: 'reshard_after_forward', label: 'reshard after forward', kind: 'flag', tip: 'FSDP frees a layer\'s gathered parameters after its forward; false keeps them to its backward. Default: true.' },
    { key: 'fsdp_version', label: 'FSDP version', kind: 'choice', values: ['1', '2'], numeric: true, tip: 'Which FSDP shards the model: 1 (FSDP1\'s FlatParameter units, verl\'s strategy fsdp) or 2 (fully_shard, verl\'s strategy fsdp2; torchtitan\'s only). Default: the framework\'s (verl 1, torchtitan 2).' },
    { key: 'accumulate_unsharded', label: 'accumulate unsharded', kind: 'flag', tip: 'FSDP keeps gathered parameters and unsharded gradients between micro-batches (pipeline stages). Default: false.' },
    { key: 'ddp_bucket_view', label: 'DDP bucket view', kind: 'flag', tip: 'DDP\'s gradient_as_bucket_view: false keeps its buckets as a second copy of every gradient. Default: true.' },
    { key: 'async_tp', label: 'async TP', kind: 'flag', tip: 'Asynchronous tensor parallelism (Megatron-LM tp-comm-overlap, torchtitan symmetric memory): its buffers are device overheads. Default: false.' },
    { key: 'optimizer_offload', label: 'ZeRO-Offload', kind: 'flag', tip: 'Optimizer states, fp32 parameters and gradients in host memory, the step on the CPU (ZeRO 2 or 3). Default: false.' },
    { key: 'compile', label: 'torch.compile', kind: 'flag', tip: 'torch.compile: what inductor\'s partitioner saves for backward. Profile pytorch: each block compiled (torchtitan), measured for torchtitan\'s Llama block (also under its TP plan with sequence parallelism), Qwen2/Qwen3, Gemma 2/3 and GPT-2 blocks (flash, cp 1, recompute none or full). Profile hf: the whole transformers model compiled (Trainer\'s torch_compile), measured for Llama, Qwen2/3, Mistral and Phi-3 models (bf16, flash, one GPU, no recompute). Default: false.' },
    { key: 'activation_memory_budget', label: 'compile memory budget', kind: 'number', tip: 'torch._functorch.config.activation_memory_budget: 1 is modelled; 0 is recompute full; values between are refused (the partitioner\'s knapsack). Default: 1.' },
    { key: 'loss', label: 'loss', kind: 'text', suggest: ['eager', 'parallel', 'chunked:8', 'compiled', 'fused', 'logprob', 'logprob+entropy', 'logprob_torch', 'logprob_trl', 'value'], tip: 'How the loss is computed: eager (fp32 logits), parallel (PyTorch\'s loss_parallel on a vocabulary-sharded head, tp > 1: torchtitan\'s default there), chunked:K, compiled, fused; or verl\'s RL actor: logprob (flash-attn cross entropy), logprob_torch (its torch fallback), each with +entropy (compiled) or +entropy:eager|chunked|checkpoint; or its PPO critic: value (a score head and the clipped value loss); or TRL\'s GRPOTrainer: logprob_trl (the response\'s logits only, the dapo loss), logprob_trl+kl (with a reference); or OpenRLHF\'s actor: logprob_openrlhf (fp32 logits of every token), logprob_openrlhf+entropy (with --actor.entropy_coef). Default: eager.' },
    { key: 'response_len', label: 'response tokens', kind: 'int', unit: 'tokens', tip: 'With an RL loss (logprob): the response tokens per sequence PPO\'s policy loss runs over (verl pads responses to response_length). Default: the whole sequence.' },
  ] },
  { legend: 'Precision', rows: [
    { key: 'param_dtype', label: 'parameters', kind: 'choice', list: 'dtypes', tip: 'The parameters\' dtype. Default: bf16.' },
    { key: 'grad_dtype', label: 'gradients', kind: 'choice', list: 'dtypes', tip: 'The gradients\' dtype. Default: bf16.' },
    { key: 'master_weights', label: 'fp32 master weights', kind: 'flag', tip: 'An fp32 master copy when the parameters are not fp32. Default: true.' },
    { key: 'optimizer_dtype', label: 'optimizer states', kind: 'choice', list: 'dtypes', tip: 'AdamW\'s and SGD momentum\'s state dtype. Default: fp32.' },
    { key: 'float8', label: 'float8 linears', kind: 'choice', list: 'float8', tip: 'Float8 block linears: tensorwise, rowwise, mxfp8 (torchao) or delayed (TransformerEngine). Default: none.' },
    { key: 'float8_all_gather', label: 'float8 all-gather', kind: 'flag', tip: 'FSDP gathers the block linears\' weights in e4m3 (tensorwise, ZeRO 3). Default: false.' },
    { key: 'fp8_amax_history', label: 'fp8 amax history', kind: 'int', tip: 'TransformerEngine\'s amax history length (delayed scaling). Default: 1.' },
  ] },
  { legend: 'LoRA', rows: [
    { key: 'lora_rank', label: 'LoRA rank', kind: 'int', tip: 'Fine-tune low-rank adapters of this rank; the base is frozen. Default: none (full training).' },
    { key: 'lora_targets', label: 'LoRA targets', kind: 'names', unit: 'comma-separated', tip: 'The linears that get adapters: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, fc1, fc2. Default: q_proj, v_proj.' },
    { key: 'lora_dropout', label: 'LoRA dropout', kind: 'number', tip: 'Dropout on the adapters\' input, in [0, 1). Default: 0.' },
    { key: 'lora_dtype', label: 'adapter dtype', kind: 'choice', list: 'dtypes', tip: 'The adapters\' dtype. Default: the parameters\'.' },
    { key: 'qlora', label: 'QLoRA (4-bit base)', kind: 'flag', tip: 'The frozen base stored as NF4 (bitsandbytes). Default: false.' },
  ] },
  { legend: 'Recompute, dropout, model', rows: [
    { key: 'custom_keep', label: 'custom keep', kind: 'names', unit: 'record ids', tip: 'With recompute custom: the record ids each layer keeps (e.g. attn.qkv_in, mlp.fc1_in). Default: none.' },
    { key: 'attention_dropout', label: 'attention dropout', kind: 'number', tip: 'Dropout on the attention probabilities, in [0, 1). Default: the model\'s.' },
    { key: 'hidden_dropout', label: 'hidden dropout', kind: 'number', tip: 'Dropout on the residual branches and embeddings, in [0, 1). Default: the model\'s.' },
    { key: 'moe_imbalance', label: 'MoE imbalance', kind: 'number', tip: 'The busiest expert-parallel rank\'s routed tokens over the mean (1 to ep). Default: 1.' },
    { key: 'mtp', label: 'multi-token prediction', kind: 'flag', tip: 'Train with the model\'s MTP depths (DeepSeek-V3). Default: false.' },
  ] },
  { legend: 'Device', rows: [
    { key: 'alloc_conf', label: 'PYTORCH_CUDA_ALLOC_CONF', kind: 'text', tip: 'The caching allocator\'s settings, e.g. expandable_segments:True. Default: the default allocator.' },
    { key: 'fragmentation_pct', label: 'fragmentation', kind: 'number', unit: '%', tip: 'A manual allowance on the peak instead of the allocator replay\'s figure, 0 to 100. Default: 0 (the replay).' },
    { key: 'cublas_workspace_bytes', label: 'cuBLAS workspace', kind: 'int', unit: 'bytes', tip: 'cuBLAS workspace, all step long. Default: 33,554,432 (PyTorch on sm90).' },
    { key: 'grad_bucket_bytes', label: 'gradient bucket', kind: 'int', unit: 'bytes', tip: 'The gradient reduce bucket (data parallel). Default: 26,214,400 (DDP bucket_cap_mb 25).' },
    { key: 'cuda_context_bytes', label: 'CUDA context', kind: 'int', unit: 'bytes', tip: 'CUDA context, PyTorch start-up and loaded kernels. Default: the GPU\'s measured figure.' },
    { key: 'nccl_comm_bytes', label: 'NCCL communicator', kind: 'int', unit: 'bytes', tip: 'Device memory of one NCCL communicator. Default: derived from NCCL\'s channels.' },
    { key: 'gpus_per_node', label: 'GPUs per node', kind: 'int', tip: 'Which NCCL groups stay inside a node. Default: 8.' },
    { key: 'device_stages', label: 'stages replayed', kind: 'choice', values: ['worst', 'all'], tip: 'The allocator replays the most loaded stage (worst) or every stage (all). Default: worst.' },
  ] },
];
// Keys the engine reads that have no control of their own, and why (the coverage check reads it).
const NOT_ON_PAGE = {
  grad_accum: 'the micro-batches / step field: one key under two names',
  gpu_memory_bytes: 'the GPU memory field, which takes any size: one key under two names',
};
function optionRows() { return OPTION_GROUPS.flatMap((g) => g.rows); }
function optionId(key) { return 'opt-' + key; }

// Builds the panel's fieldsets from the table and the engine's option lists.
function buildOptions(lists) {
  const host = $('option-groups');
  clear(host);
  for (const g of OPTION_GROUPS) {
    const fs = el('fieldset');
    fs.appendChild(el('legend', g.legend));
    const grid = el('div', null, 'grid');
    for (const r of g.rows) {
      const label = tip(el('label', r.label + (r.unit ? ' (' + r.unit + ')' : '') + ' '), r.tip);
      OPTION_TIPS[r.key] = r.tip;
      let c;
      if (r.kind === 'choice' || r.kind === 'flag') {
        c = el('select');
        c.appendChild(el('option', 'default')).value = '';
        for (const v of r.kind === 'flag' ? ['true', 'false'] : (r.values || lists[r.list] || [])) c.appendChild(el('option', v)).value = v;
      } else {
        c = el('input');
        c.placeholder = 'default';
        c.spellcheck = false;
        if (r.kind === 'int' || r.kind === 'number') c.inputMode = r.kind === 'int' ? 'numeric' : 'decimal';
        if (r.suggest) { c.setAttribute('list', optionId(r.key) + '-list'); const dl = el('datalist'); dl.id = optionId(r.key) + '-list'; for (const v of r.suggest) dl.appendChild(el('option')).value = v; grid.appendChild(dl); }
      }
      c.id = optionId(r.key);
      c.dataset.field = 'config.' + r.key;
      c.dataset.key = r.key;
      c.setAttribute('aria-label', r.label + '. ' + r.tip);
      label.appendChild(c);
      grid.appendChild(label);
      const err = el('span', null, 'err');
      err.dataset.err = 'config.' + r.key;
      err.setAttribute('role', 'alert');
      grid.appendChild(err);
    }
    fs.appendChild(grid);
    host.appendChild(fs);
  }
  const not = el('p', 'Not here: ', 'note');
  for (const [k, why] of Object.entries(NOT_ON_PAGE)) {
    const s = el('span', k + ' (' + why + ') ');
    s.dataset.key = k;
    s.className = 'not-on-page';
    not.appendChild(s);
  }
  host.appendChild(not);
}

// Controls that apply only beside another setting: empty, they are disabled with the reason (a
// value given stays enabled and is sent, for the engine to refuse by its field if it must).
const val = (id) => ($(id) ? $(id).value.trim() : '');
const APPLIES = {
  float8_all_gather: [() => val(optionId('float8')) === 'tensorwise', 'applies to tensorwise float8 under ZeRO 3 (FSDP)'],
  fp8_amax_history: [() => val(optionId('float8')) === 'delayed', 'applies to float8 delayed (TransformerEngine)'],
  lora_targets: [() => val(optionId('lora_rank')) !== '', 'applies with a LoRA rank'],
  lora_dropout: [() => val(optionId('lora_rank')) !== '', 'applies with a LoRA rank'],
  lora_dtype: [() => val(optionId('lora_rank')) !== '', 'applies with a LoRA rank'],
  qlora: [() => val(optionId('lora_rank')) !== '', 'applies with a LoRA rank'],
  activation_memory_budget: [() => val(optionId('compile')) === 'true', 'applies with torch.compile'],
  custom_keep: [() => val('recompute') === 'custom', 'applies with recompute custom'],
  optimizer_impl: [() => val('optimizer') === '' || val('optimizer') === 'adamw', 'applies to AdamW'],
  fsdp_version: [() => ['verl', 'torchtitan'].includes(val(optionId('framework'))), 'applies with framework verl or torchtitan'],
  response_len: [() => val(optionId('loss')).startsWith('logprob'), 'applies with an RL loss (logprob)'],
};
function applyApplicability() {
  for (const [key, [applies, why]] of Object.entries(APPLIES)) {
    const c = $(optionId(key));
    if (!c) continue;
    const off = !applies() && c.value.trim() === '';
    if (c.disabled !== off) c.disabled = off;
    const label = c.closest('label');
    setData(label, 'why', off ? why : '');
    if (off) tip(label, OPTION_TIPS[key] + ' Not now: ' + why + '.');
    else tip(label, OPTION_TIPS[key]);
  }
}
const OPTION_TIPS = {};

// The options given, as the engine reads them (empty controls are left to the defaults).
function readOptions(config) {
  let n = 0;
  for (const r of optionRows()) {
    const raw = $(optionId(r.key)).value.trim();
    if (raw === '') continue;
    ++n;
    if (r.kind === 'flag') config[r.key] = raw === 'true';
    else if (r.kind === 'int' || r.kind === 'number' || r.numeric) config[r.key] = typed(raw);
    else if (r.kind === 'names') config[r.key] = raw.split(/[\s,]+/).filter(Boolean);
    else config[r.key] = raw;
  }
  setText($('options-count'), n ? n + ' set' : '');
}

// What an empty control shows: a select its first option's text, a field its placeholder.
function showDefault(c, text) {
  if (c.tagName === 'SELECT') setText(c.options[0], text);
  else if (c.placeholder !== text) c.placeholder = text;
}

// Each empty control shows what the engine used: the answer's config value, with the framework
// that filled it when one did.
function showOptionDefaults(est) {
  const used = est.config || {};
  const filled = new Map((est.framework_defaults || []).map((d) => [d.key, d]));
  for (const r of optionRows()) {
    const c = $(optionId(r.key));
    const v = used[r.key];
    const text = v === undefined ? 'default' : Array.isArray(v) ? v.join(', ') : String(v);
    const why = filled.has(r.key) ? used.framework + ': ' : 'default: ';
    showDefault(c, why + text);
    OPTION_TIPS[r.key] = r.tip + (filled.has(r.key) ? ' Now ' + text + ', from ' + filled.get(r.key).source : '');
  }
  applyApplicability();
}

// The form's selects and fields a framework has defaults for: emptied when a framework is chosen
// (and absent from its link) so that its defaults apply; each then shows the value used.
const FRAMEWORK_FILLED = ['dtype', 'attention', 'optimizer', 'profile', 'schedule', 'zero', 'recompute'];
function clearForFramework(p) {
  for (const id of FRAMEWORK_FILLED) if (!p || !p.has(id)) $(id).value = '';
}
// The form's fields a launch config sets: emptied when one is used, so that its values apply and
// each field shows the value read.
const LAUNCH_FILLED = FRAMEWORK_FILLED.concat(['micro_batch', 'seq', 'micro_batches', 'tp', 'pp', 'vpp', 'cp', 'dp', 'ep', 'layer_split', 'dropout']);
function clearForLaunch() {
  for (const id of LAUNCH_FILLED) $(id).value = '';
  $('sp').checked = $('offload').checked = false;
  for (const r of optionRows()) $(optionId(r.key)).value = '';
}
function showFormDefaults(est) {
  const used = est.config || {};
  const filled = new Set((est.framework_defaults || []).map((d) => d.key));
  for (const id of LAUNCH_FILLED) {
    const v = id === 'dropout' ? used.hidden_dropout : used[id];
    if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
    const text = (filled.has(id) ? used.framework + ': ' : 'default: ') + String(v);
    showDefault($(id), text);
  }
}

// URL state: every option under its key (old links have none and keep their answer).
function writeOptionsHash(p) {
  for (const r of optionRows()) { const v = $(optionId(r.key)).value.trim(); if (v !== '') p.set(r.key, v); }
}
function readOptionsHash(p) {
  let any = false;
  for (const r of optionRows()) {
    const c = $(optionId(r.key));
    const v = p.has(r.key) ? p.get(r.key) : '';
    if (c.tagName === 'SELECT') setSelect(c, v); else c.value = v;
    any = any || v !== '';
  }
  if (any) $('options').open = true;
  applyApplicability();
  const fw = p.get('framework');
  if (fw && fw !== 'plain') clearForFramework(p);
}
