// The RL step (the engine's rl command): GRPO or PPO as verl runs it beside a vLLM rollout on
// every GPU, as OpenRLHF runs it (hybrid engine or separate pools), or GRPO as TRL's GRPOTrainer runs it, for the form's model, sequence, micro-batch and
// GPU; each phase as a bar of what the trainer and vLLM hold against the GPU, the peak phase,
// vLLM's KV cache, the changes that fit.

// The request: the form's model and shape only (the framework's defaults fill the actor's other
// keys); TRL adds its trainer and generation choices, verl its offloads.
function rlRequest() {
  const form = readForm();
  const trl = $('rl-framework').value === 'trl';
  const config = { dp: typed($('rl-gpus').value) };
  for (const k of ['micro_batch', 'seq', 'gpu', 'gpu_memory']) if (form.config[k] !== undefined) config[k] = form.config[k];
  if ($('rl-response').value.trim() !== '' && $('rl-framework').value !== 'openrlhf') config.response_len = typed($('rl-response').value);
  if (trl && $('rl-trainer').value === 'zero3') Object.assign(config, { framework: 'deepspeed', zero: 3 });
  if (trl && $('rl-trainer').value === 'ddp') Object.assign(config, { framework: 'hf-trainer', param_dtype: 'bf16' });
  // LoRA: the rank here; TRL's targets the form's or peft's default for Llama and Qwen models
  // (q_proj, v_proj), verl's the form's or its own all-linear default (the engine fills it).
  const verl = $('rl-framework').value === 'verl';
  if ((trl || verl) && !$('rl-lora').disabled && $('rl-lora').value.trim() !== '') {
    config.lora_rank = typed($('rl-lora').value);
    if (form.config.lora_targets !== undefined) config.lora_targets = form.config.lora_targets;
    else if (trl) config.lora_targets = ['q_proj', 'v_proj'];
  }
  const rollout = { tp: typed($('rl-tp').value), gpu_memory_utilization: typed($('rl-util').value), free_cache_engine: !$('rl-awake').checked };
  const rl = { algorithm: $('rl-algorithm').value, reference: $('rl-reference').checked };
  if ($('rl-framework').value === 'openrlhf') {
    Object.assign(rl, { framework: 'openrlhf', deepspeed_sleep: $('rl-ds-sleep').checked, rollout });
    if ($('rl-orl-zero').value === '3') config.zero = 3;
    if ($('rl-reward-model').checked) rl.reward_model = true;
    if ($('rl-ref-offload').checked) rl.reference_offload = true;
    if ($('rl-reward-offload').checked) rl.reward_offload = true;
    // Separate pools: each model's GPUs as typed (OpenRLHF's 8 when empty), the colocations
    // when ticked; the engine refuses a key for a model the step does not load, beside its field.
    if ($('rl-orl-layout').value === 'separate') {
      rollout.mode = 'separate';
      const given = (id) => $(id).value.trim() !== '';
      if (given('rl-engines')) rollout.num_engines = typed($('rl-engines').value);
      for (const [id, key] of [['rl-ref-gpus', 'reference_gpus'], ['rl-critic-gpus', 'critic_gpus'], ['rl-reward-gpus', 'reward_gpus']])
        if (given(id)) rl[key] = typed($(id).value);
      if ($('rl-colocate-ref').checked) rl.colocate_actor_ref = true;
      if ($('rl-colocate-reward').checked) rl.colocate_critic_reward = true;
    }
  } else if (trl && rl.algorithm === 'dpo') {
    rl.framework = 'trl';
    delete rl.reference;  // DPO always loads its reference
  } else if (trl) {
    const gen = $('rl-engine').value;
    rl.framework = 'trl';
    rl.rollout = gen === 'transformers' ? { engine: 'transformers' } : Object.assign({ engine: 'vllm', mode: gen }, gen === 'colocate' ? rollout : {});
  } else {
    if ($('rl-verl-engine').value === 'sglang') rollout.engine = 'sglang';
    else if ($('rl-layered').checked) rollout.layered_summon = true;
    // vLLM's expert parallelism: data_parallel_size = EP / tp (0 when it does not divide: the
    // engine's message then names the EP field).
    const ep = $('rl-ep').value.trim();
    if (rollout.engine !== 'sglang' && ep !== '' && ep !== '1') {
      rollout.expert_parallel_size = typed(ep);
      const t = Number(rollout.tp);
      rollout.data_parallel_size = Number.isInteger(Number(ep) / t) ? Number(ep) / t : 0;
    }
    Object.assign(rl, { param_offload: $('rl-param-offload').checked, optimizer_offload: $('rl-optimizer-offload').checked, rollout });
  }
  const req = { command: 'rl', config, rl };
  for (const k of ['preset', 'model_text']) if (form[k] !== undefined) req[k] = form[k];
  return req;
}

// Each framework's controls: the other's are hidden; the rollout's defaults are the framework's
// own (verl: tp 2, utilization 0.5, vLLM asleep between generations; TRL: tp 1, 0.3, awake).
// The vLLM settings apply only where vLLM runs on these GPUs.
function rlControls(changed) {
  const fw = $('rl-framework').value;
  for (const e of $('rl-panel').querySelectorAll('[data-rl-only]')) e.hidden = !e.dataset.rlOnly.split(' ').includes(fw);
  $('rl-response').placeholder = fw === 'trl' ? '512 (TRL)' : 'the sequence';
  $('rl-response').disabled = fw === 'openrlhf';
  $('rl-response').title = fw === 'openrlhf' ? 'OpenRLHF\'s loss runs over every position (its action mask)' : '';
  if (changed) {
    $('rl-tp').value = fw === 'verl' ? '2' : '1';
    $('rl-util').value = { verl: '0.5', trl: '0.3', openrlhf: '0.95' }[fw];
    $('rl-awake').checked = fw !== 'verl';
    $('rl-reference').checked = fw === 'openrlhf';  // OpenRLHF's --algo.kl.init_coef 0.01
    if (fw === 'trl') $('rl-algorithm').value = 'grpo';
  }
  // OpenRLHF's separate pools: their controls shown, vLLM awake (OpenRLHF turns sleep off there).
  const pools = fw === 'openrlhf' && $('rl-orl-layout').value === 'separate';
  for (const e of $('rl-panel').querySelectorAll('[data-rl-separate]')) e.hidden = !pools;
  const vllmHere = fw !== 'trl' || ($('rl-engine').value === 'colocate' && $('rl-algorithm').value !== 'dpo');
  for (const id of ['rl-tp', 'rl-util', 'rl-awake']) {
    $(id).disabled = !vllmHere;
    $(id).title = vllmHere ? '' : 'No vLLM on these GPUs with this generation choice';
  }
  if (pools) {
    $('rl-awake').checked = true;
    $('rl-awake').disabled = true;
    $('rl-awake').title = 'OpenRLHF turns vLLM\'s sleep off without --train.colocate_all';
  }
  for (const o of $('rl-algorithm').options) {
    if (o.text === 'ppo') { o.disabled = fw === 'trl'; o.title = fw === 'trl' ? 'TRL runs GRPO and DPO' : ''; }
    if (o.text === 'dpo') { o.disabled = fw !== 'trl'; o.title = fw !== 'trl' ? 'DPO is TRL\'s DPOTrainer' : ''; }
  }
  if ($('rl-algorithm').selectedOptions[0]?.disabled) $('rl-algorithm').value = 'grpo';
  const dpo = $('rl-algorithm').value === 'dpo';
  $('rl-engine').disabled = dpo;
  $('rl-engine').title = dpo ? 'DPO generates nothing' : '';
  $('rl-reference').disabled = dpo;
  $('rl-reference').title = dpo ? 'DPO always loads its reference' : '';
  // LoRA applies with verl's vLLM rollout only: the reason replaces the tooltip while the field
  // is off.
  const lora = $('rl-lora');
  const sglang = fw === 'verl' && $('rl-verl-engine').value === 'sglang';
  if (lora.dataset.tip === undefined) lora.dataset.tip = lora.title;
  lora.disabled = sglang;
  lora.title = sglang ? 'verl runs LoRA with vLLM only (docs/advance/ppo_lora.rst)' : lora.dataset.tip;
  const layered = $('rl-layered').parentElement;
  if (layered.dataset.tip === undefined) layered.dataset.tip = layered.title;
  $('rl-layered').disabled = sglang;
  $('rl-ep').disabled = sglang;
  layered.title = sglang ? 'Read with vLLM only (its sleep level and verl\'s LoRA sync)' : layered.dataset.tip;
}

function runRl() {
  if (!state.bootDone) return;
  const panel = $('rl-panel');
  clearRlErrors();
  const req = rlRequest();
  panel.dataset.request = JSON.stringify(req);
  state.rlId = send('rl', req);
  panel.dataset.state = 'running';
  $('rl-summary').textContent = 'Answering…';
}

function rlError(panel, err) {
  panel.dataset.state = 'error';
  $('rl-summary').textContent = '';
  const f = String(err.field || '');
  const slot = panel.querySelector('[data-rl-err="' + CSS.escape(f) + '"]');
  (slot || panel.querySelector('[data-rl-err="rl"]')).textContent = err.message;
  const input = panel.querySelector('[data-rl-field="' + CSS.escape(f) + '"]');
  if (input) input.classList.add('invalid');
}

function rlRow(ans, p, i) {
  const tr = document.createElement('tr');
  if (p.id === ans.peak.phase && (p.pool || '') === (ans.peak.pool || '')) tr.classList.add('peak');
  if (p.headroom_bytes < 0) tr.classList.add('over');
  tr.appendChild(el('td', p.label));
  tr.appendChild(tip(el('td', fmt(p.total_bytes), 'num'), commas(p.total_bytes) + ' bytes on the GPU in this phase'));
  const bar = el('div', '', 'rl-bar');
  // Every process but vLLM's is the training side (verl's and TRL's trainer; OpenRLHF's actor,
  // critic, reference and reward processes).
  const part = (who) => p.lines.filter((l) => (l.process === 'vllm') === (who === 'vllm')).reduce((s, l) => s + l.bytes, 0);
  for (const who of ['trainer', 'vllm']) {
    const span = el('span', '', who);
    span.style.width = Math.min(100, 100 * part(who) / ans.capacity_bytes).toFixed(2) + '%';
    bar.appendChild(span);
  }
  const lines = p.lines.map((l) => l.process + ': ' + l.what + ' ' + fmt(l.bytes) + ' (' + l.basis + ')').join('\n');
  const td = document.createElement('td');
  td.appendChild(tip(bar, lines));
  tr.appendChild(td);
  tr.appendChild(el('td', (p.headroom_bytes < 0 ? '-' : '') + fmt(Math.abs(p.headroom_bytes)), 'num'));
  tr.dataset.phase = p.id;
  if (p.pool) tr.dataset.pool = p.pool;
  tr.dataset.index = String(i);
  return tr;
}

function onRl(m) {
  if (m.id !== state.rlId) return;
  const ans = JSON.parse(m.text);
  const panel = $('rl-panel');
  panel.dataset.ms = m.ms.toFixed(1);
  panel.dataset.answer = m.text;
  const tb = $('rl-table').tBodies[0];
  clear(tb);
  clear($('rl-notes'));
  if (!ans.ok) { rlError(panel, ans.error); return; }
  panel.dataset.state = 'ok';
  const peak = ans.phases.find((p) => p.id === ans.peak.phase && (p.pool || '') === (ans.peak.pool || ''));
  const v = ans.vllm;
  const verdict = (ans.fits ? 'Fits: ' : 'Does not fit: ') + 'the peak is ' + fmt(ans.peak.bytes) + ' in ' + peak.label.split(' (')[0] +
    ', against ' + fmt(ans.capacity_bytes) + '. ';
  const gen = ans.rollout.engine === 'none' ? 'DPO: no generation; the reference\'s forward runs inside the loss.'
    : ans.rollout.engine === 'transformers' ? 'Generation: transformers\' generate on the policy, ' + ans.rollout.steps_per_generation + ' step(s) of micro-batches at once.'
    : 'Generation: on the vLLM server\'s GPUs (not sized here).';
  const sglang = ans.rollout.engine === 'sglang';
  const served = sglang
    ? 'SGLang: ' + fmt(v.requested_bytes) + ' awake (weights, pool, maps), ' + fmt(v.kv_cache_bytes) + ' of KV pool = ' + commas(v.kv_tokens) + ' tokens (' +
      v.concurrency.toFixed(1) + ' sequences of the prompt and response)' + (v.starts ? '.' : '; SGLang does not start.')
    : 'vLLM: a ' + fmt(v.requested_bytes) + ' budget, ' + fmt(v.kv_cache_bytes) + ' of KV cache = ' +
      commas(v.kv_blocks) + ' blocks (' + commas(v.kv_tokens) + ' tokens, ' + v.concurrency.toFixed(1) + ' sequences of ' + commas(v.max_model_len) + ')' +
      (v.starts ? '.' : '; vLLM does not start.');
  // OpenRLHF's separate pools: each pool's GPUs and peak after the verdict.
  const pools = (ans.pools || []).map((p) => p.name + ' ' + p.gpus + ' GPU' + (p.gpus === 1 ? '' : 's') + ': ' + fmt(p.peak.bytes) + (p.fits ? '' : ' (does not fit)'));
  const layout = pools.length ? ' Pools (' + ans.gpus + ' GPUs): ' + pools.join('; ') + '.' : '';
  $('rl-summary').textContent = verdict + (v.on_these_gpus ? served : gen) + layout;
  ans.phases.forEach((p, i) => tb.appendChild(rlRow(ans, p, i)));
  for (const f of ans.fixes || []) $('rl-notes').appendChild(el('li', 'Fits with ' + f.change + ': peak ' + fmt(f.peak_bytes) + ' in ' + f.phase + (f.gpus ? ' (' + f.gpus + ' GPUs in all)' : '') + '.', 'fix'));
  const opts = (ans.rollout_options || []).map((o) => 'tp ' + o.tp + (o.num_engines ? ' × ' + o.num_engines + ' engines' : '') + ': ' + commas(o.kv_tokens) + ' KV tokens, peak ' + fmt(o.peak_bytes) +
    (!o.starts ? ' (vLLM does not start)' : o.fits ? '' : ' (does not fit)'));
  if (opts.length) $('rl-notes').appendChild(el('li', 'Rollout tensor parallelism, the largest KV cache first: ' + opts.join('; ') + '.', 'options'));
  for (const n of ans.notes) $('rl-notes').appendChild(el('li', n));
}

// An edit in the panel takes the last answer's messages away (each overlays the row below its
// field, where it could cover the button).
function clearRlErrors() {
  const panel = $('rl-panel');
  for (const slot of panel.querySelectorAll('[data-rl-err]')) slot.textContent = '';
  for (const input of panel.querySelectorAll('[data-rl-field]')) input.classList.remove('invalid');
}

function wireRl() {
  $('rl-run').addEventListener('click', runRl);
  $('rl-panel').addEventListener('input', clearRlErrors);
  $('rl-framework').addEventListener('change', () => rlControls(true));
  $('rl-engine').addEventListener('change', () => rlControls(false));
  $('rl-algorithm').addEventListener('change', () => rlControls(false));
  $('rl-trainer').addEventListener('change', () => rlControls(false));
  $('rl-verl-engine').addEventListener('change', () => rlControls(false));
  $('rl-orl-layout').addEventListener('change', () => rlControls(false));
  rlControls(false);
  for (const id of ['rl-gpus', 'rl-response', 'rl-lora', 'rl-tp', 'rl-util', 'rl-ep', 'rl-engines', 'rl-ref-gpus', 'rl-critic-gpus', 'rl-reward-gpus'])
    $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); runRl(); } });
}
