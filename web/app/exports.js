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

function wireExports() {
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
