// The tables: what one layer keeps for backward (by layer kind), recompute policies, accounting
// profiles, the inference KV cache, the explained formulas and a worked example's checks.

// A stack of layer kinds (Nemotron-H, DeepSeek, gpt-oss, Llama 4): a selector shows each kind's
// records as the engine lists them (model.layer_kinds: every tensor, no recompute); the default
// stays layer 0 under the chosen recompute policy (per_layer).
function drawInventory(est) {
  state.inventoryEst = est;
  const kinds = est.model.layer_kinds || [];
  const sel = $('inventory-kind');
  const keep = sel.value;
  clear(sel);
  sel.appendChild(el('option', 'layer 0, under the recompute policy'));
  sel.lastChild.value = '';
  for (const k of kinds) {
    const o = el('option', k.name + ' (' + commas(k.layers) + ' layers, no recompute)');
    o.value = k.name;
    sel.appendChild(o);
  }
  sel.value = kinds.some((k) => k.name === keep) ? keep : '';
  $('inventory-kind-label').hidden = kinds.length === 0;
  drawInventoryRows();
}
function drawInventoryRows() {
  const est = state.inventoryEst;
  const kind = (est.model.layer_kinds || []).find((k) => k.name === $('inventory-kind').value);
  const tensors = kind ? kind.tensors : est.per_layer.tensors;
  const tbody = $('inventory').tBodies[0];
  clear(tbody);
  for (const t of tensors) {
    const tr = el('tr');
    tr.appendChild(el('td', t.name, 'mono'));
    tr.appendChild(el('td', t.shape + ' = ' + t.dims.join('×'), 'mono'));
    tr.appendChild(el('td', t.dtype));
    const b = tip(el('td', commas(t.bytes), 'num'), fmt(t.bytes, 2));
    b.dataset.tensor = t.name;
    tr.appendChild(b);
    tr.appendChild(el('td', t.backward));
    tr.appendChild(tip(el('td', t.why), 'source: ' + t.source));
    tbody.appendChild(tr);
  }
  const tr = el('tr', null, 'total');
  tr.appendChild(el('td', 'per layer', 'mono'));
  tr.appendChild(el('td', kind ? 'kind ' + kind.name + ', ' + commas(kind.layers) + ' layers' :
    'linear in s ' + commas(est.per_layer.linear_bytes) + ', quadratic ' + commas(est.per_layer.quadratic_bytes)));
  tr.appendChild(el('td', ''));
  const bytes = kind ? kind.full_bytes : est.per_layer.activation_bytes;
  const sum = tip(el('td', commas(bytes), 'num'), fmt(bytes, 2));
  sum.id = 'per-layer-bytes';
  tr.appendChild(sum);
  tr.appendChild(el('td', ''));
  tr.appendChild(el('td', ''));
  tbody.appendChild(tr);
  $('inventory-note').textContent = kind
    ? '(bytes; ' + est.profile + ' profile, one layer of kind ' + kind.name + ', no recompute)'
    : '(bytes; ' + est.profile + ' profile, recompute ' + est.per_layer.recompute + ', layer 0 of stage 0)';
}

function policyTip(v, name) {
  if (!name.startsWith('layers:')) return name;
  const letters = v.glossary.recompute_letters;
  return name + ': one letter per layer of a chunk; ' + [...new Set(name.slice(7))].map((c) => c + ' = ' + (letters[c] || '?')).join('; ');
}

function drawPolicies(v) {
  const tbody = $('policies').tBodies[0];
  clear(tbody);
  for (const p of v.policies) {
    const tr = el('tr', null, p.current ? 'current' : '');
    tr.appendChild(tip(el('td', p.policy + (p.current ? ' (shown)' : ''), 'mono'), policyTip(v, p.policy)));
    tr.appendChild(tip(el('td', p.ok ? fmt(p.peak_bytes) : '—', 'num'), p.ok ? exact(p.peak_bytes) : 'not valid here'));
    tr.appendChild(el('td', p.ok ? pct(p.recompute_overhead_pct) : '—', 'num'));
    tr.appendChild(el('td', p.fits === undefined ? '' : p.fits ? 'yes' : 'no'));
    tbody.appendChild(tr);
  }
  const pb = $('profiles').tBodies[0];
  clear(pb);
  for (const p of v.profiles) {
    const tr = el('tr', null, p.current ? 'current' : '');
    tr.appendChild(el('td', p.profile + (p.current ? ' (shown)' : '')));
    tr.appendChild(tip(el('td', p.ok ? fmt(p.per_layer_bytes, 2) : '—', 'num'), p.ok ? exact(p.per_layer_bytes) : ''));
    tr.appendChild(tip(el('td', p.ok ? fmt(p.peak_bytes) : '—', 'num'), p.ok ? exact(p.peak_bytes) : ''));
    pb.appendChild(tr);
  }
}

function drawKv(est) {
  const dl = $('kv');
  clear(dl);
  const row = (k, b) => { dl.appendChild(el('dt', k)); dl.appendChild(tip(el('dd', fmt(b, 2)), exact(b))); };
  row('whole model', est.kv_cache.total_bytes);
  row('per GPU', est.kv_cache.per_gpu_bytes);
  dl.appendChild(el('dt', 'formula'));
  dl.appendChild(el('dd', '2 · p · L · kv · d · s · b, kept apart from training activations'));
}

function drawExplain(est) {
  const box = $('explain');
  clear(box);
  for (const x of est.explain) {
    const d = el('details', null, 'explain');
    d.appendChild(el('summary', x.title + ': ' + fmt(x.bytes, 2)));
    d.appendChild(el('p', '= ' + x.formula, 'mono'));
    d.appendChild(el('p', '= ' + x.substituted + ' bytes', 'mono'));
    d.appendChild(el('p', 'source: ' + x.source, 'note'));
    box.appendChild(d);
  }
}

function drawExample(v) {
  const panel = $('example-panel');
  if (!v.example) { panel.hidden = true; return; }
  const ex = v.example;
  panel.hidden = false;
  $('example-title').textContent = ex.title + ' (' + ex.seed + ', ' + ex.section + ')';
  const tbody = $('example-checks').tBodies[0];
  clear(tbody);
  for (const c of ex.rows) {
    const tr = el('tr');
    tr.appendChild(el('td', c.quantity, 'mono'));
    tr.appendChild(el('td', c.stated));
    tr.appendChild(el('td', commas(c.seed_formula_bytes) + ' (' + c.seed_formula + ')', 'num'));
    const cell = el('td', c.engine_bytes === null ? '—' : commas(c.engine_bytes), 'num');
    cell.dataset.quantity = c.quantity;
    tr.appendChild(cell);
    tr.appendChild(el('td', c.note || (c.agrees ? 'agrees' : '')));
    tbody.appendChild(tr);
  }
}

function wireTables() {
  // Choosing a layer kind redraws the table from the answer on screen: no engine request.
  $('inventory-kind').addEventListener('change', () => { if (state.inventoryEst) drawInventoryRows(); });
}
