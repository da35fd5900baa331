// The start: the engine's worker taken from start.js, the form filled from its list of presets, GPUs and
// options (embedded at build time, or asked of the engine), every control wired, then the first
// request.

// The worker start.js started before the page was parsed; the answers it queued meanwhile are
// handled now, in order.
function takeWorker() {
  const start = window.actmemStart;
  delete window.actmemStart;
  if (!start || !start.worker) throw new Error(start && start.error ? start.error : 'start.js did not run');
  start.worker.onmessage = onMessage;
  start.worker.onerror = (e) => engineFailed(e.message || 'worker error');
  if (start.error) engineFailed(start.error);
  for (const e of start.queued) onMessage(e);
  return start.worker;
}

function fillSelect(id, values, current) {
  const s = $(id);
  clear(s);
  // Empty: the engine's (or the chosen framework's) default, which the answer names.
  s.appendChild(el('option', 'default')).value = '';
  for (const v of values) s.appendChild(el('option', v)).value = v;
  if (current !== undefined) s.value = current;
}

function boot(list) {
  // Model presets grouped by architecture family (the engine's `family`: the preset's model_type).
  const families = new Map();
  for (const m of list.models) {
    const f = m.family || 'other';
    if (!families.has(f)) families.set(f, []);
    families.get(f).push(m);
  }
  for (const f of [...families.keys()].sort()) {
    const group = el('optgroup');
    group.label = f;
    for (const m of families.get(f)) { const o = el('option', m.id + (m.name ? ' — ' + m.name : '')); o.value = m.id; group.appendChild(o); }
    $('preset').appendChild(group);
  }
  for (const g of list.gpus) { const o = el('option', g.id + (g.name ? ' — ' + g.name : '')); o.value = g.id; $('gpu').appendChild(o); }
  state.examples = list.examples;
  for (const x of state.examples) { const o = el('option', x.id + ' — ' + x.title); o.value = x.id; $('example').appendChild(o); }
  const opt = list.options;
  fillSelect('dtype', opt.dtypes, 'bf16');
  fillSelect('attention', opt.attention, 'flash');
  fillSelect('optimizer', opt.optimizers, 'adamw');
  fillSelect('profile', opt.profiles, 'megatron');
  fillSelect('schedule', opt.schedules, '1f1b');
  buildOptions(opt);
  applyApplicability();
  const dl = $('recompute-list');
  for (const r of opt.recompute) if (!/[A-Z]/.test(r) && r !== 'custom') dl.appendChild(el('option')).value = r;
  $('preset').value = DEFAULT_PRESET;
  readHash();
  wire();
  state.bootDone = true;
  update();
}

// Each file wires its own controls; no element has two listeners for one event, so the order is free.
function wire() {
  wireCompare();
  wireAdvise();
  wireRl();
  wireForm();
  wireTables();
  wireExports();
  wireEmbed();
  wireView();
}

try {
  state.worker = takeWorker();
  // The presets answer the build embedded (build-app.mjs) fills the form now, while the engine
  // compiles; without it the engine is asked.
  if (PRESETS_AT_BUILD) boot(PRESETS_AT_BUILD);
  else state.worker.postMessage({ id: 0, lane: 'boot', request: JSON.stringify({ command: 'presets' }) });
} catch (e) {
  setStatus('error', 'The engine failed to start: ' + e);
}
