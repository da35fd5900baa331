// The exports: the answer on screen with its full timeline, as JSON or CSV (the timeline asked of
// the worker in the "export" lane).

function download(name, text, type) {
  const a = el('a');
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
}
function exportTimeline(then) {
  if (!state.shown) return;
  // The full timeline of the answer on screen (not of inputs the engine refused).
  const req = { ...state.shown.req, command: 'timeline' };
  delete req.stages;
  state.exportsPending.set(send('export', req), then);
}

// The launch config for the layout on screen: the engine's emit of the same request.
function copyLaunch(kind) {
  if (!state.shown) return;
  const req = { ...state.shown.req, command: 'estimate', emit: kind };
  delete req.stages;
  state.exportsPending.set(send('export', req), async (ans) => {
    if (!ans.ok) { $('launch-note').textContent = ans.error.message; return; }
    $('launch-text').value = ans.text;
    try { await navigator.clipboard.writeText(ans.text); $('launch-note').textContent = 'Copied (also in the box above).'; } catch (e) { $('launch-note').textContent = 'In the box above.'; }
  });
}

// A ranked layout's launch config: torchtitan's TOML under framework torchtitan, else Megatron-LM's
// arguments, for the form's request with the layout's keys.
function copyLayoutLaunch(layout) {
  const form = readForm();
  const req = { ...form, command: 'estimate', config: { ...form.config, ...layout } };
  delete req.stages;
  for (const k of ['layer_split']) if (Array.isArray(req.config[k]) && req.config[k].length === 0) delete req.config[k];
  req.emit = req.config.framework === 'torchtitan' ? 'torchtitan' : 'megatron';
  $('launch').open = true;
  state.exportsPending.set(send('export', req), async (ans) => {
    if (!ans.ok) { $('launch-note').textContent = ans.error.message; return; }
    $('launch-kind').value = req.emit === 'torchtitan' ? 'torchtitan_toml' : 'megatron_args';
    $('launch-text').value = ans.text;
    try { await navigator.clipboard.writeText(ans.text); $('launch-note').textContent = 'Copied the layout\'s launch config (also in the box).'; } catch (e) { $('launch-note').textContent = 'The layout\'s launch config is in the box.'; }
  });
}

function wireLaunch() {
  $('use-launch').addEventListener('click', () => {
    clearErrors();
    state.launch = { key: $('launch-kind').value, text: $('launch-text').value };
    clearForLaunch();
    $('launch-note').textContent = 'In use: each empty field shows the value it sets; a field given beside it must agree.';
    update();
  });
  $('clear-launch').addEventListener('click', () => { state.launch = null; $('launch-note').textContent = ''; update(); });
  $('copy-megatron').addEventListener('click', () => copyLaunch('megatron'));
  $('copy-torchtitan').addEventListener('click', () => copyLaunch('torchtitan'));
}

function wireExports() {
  wireLaunch();
  $('export-json').addEventListener('click', () => exportTimeline((tl) => {
    download('actmem.json', JSON.stringify({ view: state.shown.view, timeline: tl }, null, 2), 'application/json');
  }));
  $('export-csv').addEventListener('click', () => exportTimeline((tl) => {
    if (!tl.ok) return;
    const lines = ['stage,event,label,live_bytes,activations,recompute,transients'];
    for (const s of tl.stages) s.events.forEach((e, i) => lines.push([s.stage, i, e.label, e.live_bytes, e.activations, e.recompute, e.transients].join(',')));
    const inv = ['', 'tensor,shape,dtype,bytes,backward'];
    for (const t of state.shown.view.estimate.per_layer.tensors) inv.push([t.name, t.shape, t.dtype, t.bytes, '"' + t.backward + '"'].join(','));
    download('actmem.csv', lines.concat(inv).join('\n') + '\n', 'text/csv');
  }));
}
