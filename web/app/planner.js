// The planner and the advisor: the planner's line (the cheapest recompute policy that fits, from
// the view answer) and Find a layout (the engine's advise command, its ranked layouts).

function drawPlan(v) {
  const plan = $('plan');
  if (pending(v, 'plan')) plan.textContent = 'Planner: searching for the cheapest recompute policy that fits…';
  else if (!v.plan) plan.textContent = 'Choose a GPU for the planner.';
  else if (!v.plan.ok) plan.textContent = 'Planner: ' + v.plan.message;
  else {
    plan.textContent = v.plan.found ? 'Planner: the cheapest policy that fits is ' + v.plan.policy + (v.plan.offload ? ' with offload' : v.plan.host_layers ? ' (lower-case layers offloaded)' : '') + ', peak ' +
      fmt(v.plan.peak_bytes) + ', +' + pct(v.plan.recompute_overhead_pct) + ' FLOPs (' + v.plan.evaluated + ' policies simulated).'
      : 'Planner: no recompute policy fits this GPU (' + v.plan.evaluated + ' simulated).';
    if (v.plan.found) tip(plan, policyTip(v, v.plan.policy));
  }
}

// ---- find a layout: the engine's advise command over the form's model, sequence and GPU -----
// The keys advise chooses itself are left out of its request (it refuses them).
const adviseChooses = ['tp', 'sp', 'pp', 'vpp', 'cp', 'dp', 'ep', 'zero', 'micro_batch', 'micro_batches', 'schedule', 'recompute', 'layer_split', 'offload'];
function runAdvise() {
  if (!state.bootDone) return;
  for (const f of ['advise', 'advise.num_gpus', 'advise.global_batch']) {
    const slot = document.querySelector('[data-err="' + f + '"]');
    slot.textContent = '';
    const input = document.querySelector('[data-field="' + f + '"]');
    if (input) input.classList.remove('invalid');
  }
  const form = readForm();
  const config = Object.assign({}, form.config);
  for (const k of adviseChooses) delete config[k];
  const req = { command: 'advise', config, advise: { num_gpus: typed($('advise-gpus').value), global_batch: typed($('advise-batch').value), limit: 5 } };
  for (const k of ['preset', 'model_text', 'example']) if (form[k] !== undefined) req[k] = form[k];
  for (const k of ['num_gpus', 'global_batch']) if (req.advise[k] === undefined) delete req.advise[k];
  state.adviseId = send('advise', req);
  $('advise-panel').dataset.state = 'running';
  $('advise-summary').textContent = 'Searching…';
}
function layoutLabel(l) {
  const parts = ['tp ' + l.tp + (l.sp ? ' (SP)' : ''), 'pp ' + l.pp + (l.vpp > 1 ? ' × vpp ' + l.vpp : ''), 'cp ' + l.cp, 'dp ' + l.dp];
  if (l.ep > 1) parts.push('ep ' + l.ep);
  parts.push('ZeRO-' + l.zero, 'micro-batch ' + l.micro_batch + ' × ' + l.micro_batches);
  if (l.layer_split.length) parts.push('layers ' + l.layer_split.join(','));
  return (l.num_gpus + ' GPUs: ') + parts.join(' · ');
}
function onAdvise(m) {
  if (m.id !== state.adviseId) return;
  const ans = JSON.parse(m.text);
  const panel = $('advise-panel');
  panel.dataset.ms = m.ms.toFixed(1);
  const tb = $('advise-table').tBodies[0];
  clear(tb);
  if (!ans.ok) {
    panel.dataset.state = 'error';
    $('advise-summary').textContent = '';
    const f = String(ans.error.field || '');
    const slot = document.querySelector('[data-err="' + CSS.escape(f) + '"]');
    if (slot && f.startsWith('advise')) {
      slot.textContent = ans.error.message;
      const anchor = slot.previousElementSibling;
      if (anchor && !slot.classList.contains('general')) slot.style.top = (anchor.offsetTop + anchor.offsetHeight) + 'px';
      const input = document.querySelector('[data-field="' + CSS.escape(f) + '"]');
      if (input) input.classList.add('invalid');
    } else {
      document.querySelector('[data-err="advise"]').textContent = ans.error.message;
    }
    return;
  }
  panel.dataset.state = 'ok';
  $('advise-summary').textContent = commas(ans.enumerated) + ' layouts searched, ' + commas(ans.screened_fit) + ' fit on their tensor peak, ' +
    commas(ans.front_size) + ' not beaten on every criterion; ' + ans.device_checks + ' replayed on the device' +
    (ans.device_refused ? ', ' + ans.device_refused + ' refused there' : '') + '.' + (ans.layouts.length ? '' : ' No layout fits.');
  ans.layouts.forEach((l, i) => {
    const tr = document.createElement('tr');
    tr.appendChild(el('td', String(i + 1)));
    tr.appendChild(el('td', layoutLabel(l)));
    tr.appendChild(el('td', l.recompute + (l.offload ? ' + offload (' + l.offload_exposed_pct.toFixed(2) + '% exposed)' : '')));
    tr.appendChild(el('td', l.bubble_pct.toFixed(2) + '%', 'num'));
    tr.appendChild(el('td', l.recompute_overhead_pct.toFixed(2) + '%', 'num'));
    tr.appendChild(tip(el('td', fmt(l.comm_bytes), 'num'), commas(l.comm_bytes) + ' bytes sent per GPU per step: TP ' + fmt(l.comm.tp) + ', CP ' + fmt(l.comm.cp) + ', PP ' + fmt(l.comm.pp) + ', DP ' + fmt(l.comm.dp) + ', EP ' + fmt(l.comm.ep)));
    tr.appendChild(tip(el('td', fmt(l.device_total_bytes), 'num'), commas(l.device_total_bytes) + ' bytes on the device (reserved + fixed costs), ' + fmt(l.headroom_bytes) + ' free'));
    const td = document.createElement('td');
    const b = el('button', 'Apply', 'apply');
    b.type = 'button';
    b.dataset.change = JSON.stringify(l.config);
    b.addEventListener('click', () => applyChange(Object.assign({ layer_split: [], offload: false }, l.config)));
    td.appendChild(b);
    // The layout's launch config (the engine's emit of the form's request with this layout).
    const c = el('button', 'Copy launch config', 'copy-layout');
    c.type = 'button';
    c.addEventListener('click', () => copyLayoutLaunch(l.config));
    td.appendChild(c);
    tr.appendChild(td);
    tb.appendChild(tr);
  });
}

function wireAdvise() {
  $('advise-run').addEventListener('click', runAdvise);
  for (const id of ['advise-gpus', 'advise-batch'])
    $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); runAdvise(); } });
}
