// Check against a real run: a memory snapshot (and memory_stats JSON) compared with the prediction
// by the engine, in the worker's "compare" lane.

function runCompare() {
  const slot = document.querySelector('[data-err="snapshot"]');
  slot.textContent = '';
  if (!state.snapshotBytes || !state.bootDone) return;
  const req = Object.assign({}, readForm(), { command: 'compare' });
  if (state.statsObject) req.stats = state.statsObject;
  const copy = state.snapshotBytes.slice();  // the worker takes the copy; a new input can compare again
  state.compareId = ++state.seq;
  state.worker.postMessage({ id: state.compareId, lane: 'compare', request: JSON.stringify(req), bytes: copy }, [copy.buffer]);
  $('compare-panel').dataset.state = 'running';
}
function onCompare(m) {
  if (m.id !== state.compareId) return;
  const ans = JSON.parse(m.text);
  const panel = $('compare-panel');
  panel.dataset.state = ans.ok ? 'ok' : 'error';
  if (!ans.ok) {
    $('compare-result').hidden = true;
    document.querySelector('[data-err="snapshot"]').textContent = ans.error.message;
    return;
  }
  const tb = $('compare-table').tBodies[0];
  clear(tb);
  for (const k of ['allocated', 'reserved']) {
    const tr = el('tr');
    tr.appendChild(el('td', k + ' peak'));
    for (const v of [ans.measured[k + '_peak_bytes'], ans.predicted[k + '_peak_bytes']]) tr.appendChild(tip(el('td', fmt(v, 2), 'num'), exact(v)));
    const e = ans.error_pct[k];
    tr.appendChild(el('td', (e >= 0 ? '+' : '') + e.toFixed(1) + ' %', 'num'));
    tr.dataset.key = k;
    tb.appendChild(tr);
  }
  $('compare-peak').textContent = 'Measured: ' + ans.measured.source + (ans.measured.trace ? ', peak at trace event ' + ans.measured.peak_event + ' (' + ans.measured.peak_frame + ')' : '') +
    '. Predicted tensor peak at ' + ans.predicted.peak_at + '. At the measured peak ' + fmt(ans.explained_bytes) + ' are blocks of a predicted record\'s size, ' + fmt(ans.unexplained_bytes) + ' are not.';
  const bt = $('compare-blocks').tBodies[0];
  clear(bt);
  for (const b of ans.largest_blocks) {
    const tr = el('tr');
    tr.appendChild(tip(el('td', fmt(b.bytes, 2), 'num'), exact(b.bytes)));
    tr.appendChild(el('td', b.frame));
    tr.appendChild(el('td', b.record === null ? 'no record of this size' : b.record));
    bt.appendChild(tr);
  }
  const notes = $('compare-notes');
  clear(notes);
  for (const n of ans.notes) notes.appendChild(el('li', n));
  $('compare-result').hidden = false;
}
function readSnapshot(file) {
  file.arrayBuffer().then((buf) => { state.snapshotBytes = new Uint8Array(buf); runCompare(); });
}
function wireCompare() {
  const drop = $('snapshot-drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (f) readSnapshot(f);
  });
  $('snapshot-file').addEventListener('change', (e) => { const f = e.target.files[0]; if (f) readSnapshot(f); });
  $('stats-file').addEventListener('change', (e) => {
    const f = e.target.files[0];
    if (!f) { state.statsObject = null; runCompare(); return; }
    f.text().then((t) => {
      try { state.statsObject = JSON.parse(t); } catch (err) { state.statsObject = null; document.querySelector('[data-err="snapshot"]').textContent = 'stats: not JSON (' + err.message + ')'; return; }
      runCompare();
    });
  });
}
