// actmem page: reads the form, asks the WebAssembly engine (one JSON entry point), and draws the
// answers. No number is computed here: JS formats and draws. Nothing from the URL or a pasted file
// is ever inserted as HTML (textContent and setAttribute only).
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const SVGNS = 'http://www.w3.org/2000/svg';
  let engine = null;
  let customModel = null;   // parsed config.json when the user pasted or dropped one
  let linkError = null;     // a link whose model JSON does not parse: shown until the next edit
  let lastGood = null;      // { est, tl } of the last valid input, kept visible on errors
  let currentExample = null;
  const timings = (window.actmemTimings = []);

  // ---- small DOM helpers ------------------------------------------------------------------
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  // Charts are drawn in CSS pixels of their current width, so text keeps its size.
  const width = (svg) => Math.max(280, Math.round(svg.getBoundingClientRect().width) || 600);
  function fmtBytes(b) {
    if (b === undefined || b === null || b < 0) return '—';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let v = Number(b), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (u === 0 ? String(v) : v.toFixed(2)) + ' ' + units[u];
  }
  const commas = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const pct = (x) => (Math.round(x * 100) / 100).toFixed(2) + '%';

  function call(req) {
    const text = engine.evaluate(JSON.stringify(req));
    return JSON.parse(text);
  }

  // ---- the form <-> request ---------------------------------------------------------------
  const numeric = ['micro_batch', 'seq', 'micro_batches', 'tp', 'pp', 'vpp', 'cp', 'dp', 'ep'];
  const selects = ['dtype', 'attention', 'optimizer', 'profile', 'schedule', 'zero'];

  function parseIntField(v) {
    // Pass what the user typed; the engine rejects non-integers by field name.
    const t = v.trim();
    if (t === '') return undefined;
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) ? Number(t) : t;
  }

  function readForm() {
    const config = {};
    for (const id of numeric) {
      const v = parseIntField($(id).value);
      if (v !== undefined) config[id] = v;
    }
    for (const id of selects) config[id] = id === 'zero' ? Number($(id).value) : $(id).value;
    if (config.vpp !== undefined && config.vpp !== 1 && config.schedule === '1f1b') config.schedule = 'interleaved';
    const d = $('dropout').value.trim();
    if (d !== '') config.dropout = /^[-\d.eE+]+$/.test(d) ? Number(d) : d;
    config.recompute = $('recompute').value.trim() || 'none';
    if ($('offload').checked) config.offload = true;
    if ($('sp').checked) config.sp = true;
    const split = $('layer_split').value.trim();
    if (split !== '') config.layer_split = split.split(/[\s,]+/).filter(Boolean).map((x) => parseIntField(x));
    const gpu = $('gpu').value;
    if (gpu) config.gpu = gpu;
    const mem = $('gpu_memory').value.trim();
    if (mem !== '') {
      const gib = Number(mem);
      config.gpu_memory_bytes = Number.isFinite(gib) && gib > 0 ? Math.round(gib * 1073741824) : mem;
    }
    const req = { config };
    if (customModel) req.model = customModel; else req.preset = $('preset').value;
    return req;
  }

  // ---- URL hash state ---------------------------------------------------------------------
  const hashKeys = ['preset', 'gpu', 'gpu_memory', 'micro_batch', 'seq', 'micro_batches', 'dtype', 'attention', 'dropout',
    'optimizer', 'profile', 'recompute', 'tp', 'pp', 'vpp', 'schedule', 'layer_split', 'cp', 'dp', 'zero', 'ep'];

  function writeHash() {
    const p = new URLSearchParams();
    for (const k of hashKeys) { const v = $(k).value; if (v !== '') p.set(k, v); }
    if ($('sp').checked) p.set('sp', '1');
    if ($('offload').checked) p.set('offload', '1');
    if (customModel) p.set('model', JSON.stringify(customModel));
    if (currentExample) p.set('example', currentExample);
    const cur = new URLSearchParams(location.hash.slice(1));
    for (const k of ['theme', 'embed']) if (cur.has(k)) p.set(k, cur.get(k));
    history.replaceState(null, '', '#' + p.toString());
  }

  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    for (const k of hashKeys) {
      if (!p.has(k)) continue;
      const node = $(k);
      const v = p.get(k);
      if (node.tagName === 'SELECT' && ![...node.options].some((o) => o.value === v)) {
        node.appendChild(el('option', v)).value = v;  // unknown value: shown as text, the engine says why
      }
      node.value = v;
    }
    $('sp').checked = p.get('sp') === '1';
    $('offload').checked = p.get('offload') === '1';
    if (p.has('model')) {
      $('model-json').value = p.get('model');
      try { customModel = JSON.parse(p.get('model')); linkError = null; } catch (e) { customModel = null; linkError = { field: 'model', message: 'model: the link carries malformed JSON' }; }
    }
    if (p.has('example')) currentExample = p.get('example');
    const theme = p.get('theme');
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
    if (p.get('embed') === '1') document.body.classList.add('embed');
  }

  // ---- errors beside their fields ----------------------------------------------------------
  function clearErrors() {
    for (const e of document.querySelectorAll('[data-err]')) e.textContent = '';
    for (const e of document.querySelectorAll('.invalid')) e.classList.remove('invalid');
  }
  function showErrors(err) {
    const field = String(err.field || '').replace(/\[\d+\]$/, '');
    let slot = document.querySelector('[data-err="' + CSS.escape(field) + '"]');
    if (!slot && field.startsWith('model')) slot = document.querySelector('[data-err="model"]');
    if (!slot && field === 'config.micro_batches') slot = document.querySelector('[data-err="config.micro_batches"]');
    if (!slot && field === 'config.dropout') slot = document.querySelector('[data-err="config.dropout"]');
    if (!slot) slot = document.querySelector('[data-err="*"]');
    slot.textContent = err.message;
    const input = document.querySelector('[data-field="' + CSS.escape(field) + '"]');
    if (input) input.classList.add('invalid');
    if (field.startsWith('model')) { $('custom-model').open = true; $('model-json').classList.add('invalid'); }
  }

  // ---- drawing -----------------------------------------------------------------------------
  function tooltip(node, text) {
    node.addEventListener('mousemove', (ev) => {
      const t = $('tooltip');
      t.textContent = text;
      t.hidden = false;
      t.style.left = ev.clientX + 12 + 'px';
      t.style.top = ev.clientY + 12 + 'px';
    });
    node.addEventListener('mouseleave', () => { $('tooltip').hidden = true; });
    const title = svgEl('title');
    title.textContent = text;
    node.appendChild(title);
  }

  function drawSummary(est, tl) {
    const w = est.stages[est.activations.stage];
    const verdict = $('verdict');
    if (est.gpu) {
      verdict.textContent = est.fits ? 'Fits: peak ' + fmtBytes(est.peak_bytes) + ' of ' + fmtBytes(est.gpu.memory_bytes)
        : 'Does not fit: peak ' + fmtBytes(est.peak_bytes) + ' > ' + fmtBytes(est.gpu.memory_bytes);
      verdict.className = 'verdict ' + (est.fits ? 'ok' : 'bad');
    } else {
      verdict.textContent = 'Peak ' + fmtBytes(est.peak_bytes) + ' per GPU (pick a GPU to check the fit)';
      verdict.className = 'verdict';
    }
    verdict.dataset.peak = String(est.peak_bytes);
    const dl = $('summary');
    clear(dl);
    const rows = [
      ['model', est.model.name + ' (' + commas(est.model.params) + ' parameters)'],
      ['profile', est.profile + ', ' + est.config.attention + ' attention, recompute ' + est.config.recompute],
      // One answer: the peak and what it holds, lines that add up to it (estimate's "peak").
      ['peak (what must fit)', commas(est.peak_bytes) + ' B at ' + est.peak.at + ', stage ' + est.peak.stage],
      ['static', commas(est.peak.static_bytes) + ' B'],
      ['kept activations', commas(est.peak.kept_activations_bytes) + ' B'],
      ['recomputed', commas(est.peak.recomputed_bytes) + ' B'],
      ['transients', commas(est.peak.transient_bytes) + ' B'],
      ['per layer', commas(est.per_layer.activation_bytes) + ' B'],
      ['recompute overhead', pct(est.recompute_overhead_pct)],
    ];
    if (est.peak.fragmentation_bytes > 0) rows.splice(7, 0, ['fragmentation allowance', commas(est.peak.fragmentation_bytes) + ' B']);
    if (est.gpu) rows.push(['headroom', commas(est.headroom_bytes) + ' B']);
    for (const [k, v] of rows) { dl.appendChild(el('dt', k)); const dd = el('dd', v); dd.dataset.key = k; dl.appendChild(dd); }
    // Stacked bar: static parts, then what the peak event holds.
    const at = tl.stages[tl.peak_stage].at_peak;
    const parts = [
      ['params', 'parameters', w.static.params_bytes], ['grads', 'gradients', w.static.grads_bytes],
      ['master', 'master weights', w.static.master_bytes], ['optimizer', 'optimizer states', w.static.optimizer_bytes],
      ['activations', 'kept activations', at.activations], ['recompute', 'recomputed', at.recompute],
      ['transients', 'transients (logits, grads, buffers)', at.transients],
      ['fragmentation', 'fragmentation allowance', tl.stages[tl.peak_stage].fragmentation_bytes],
    ];
    const total = parts.reduce((s, p) => s + p[2], 0);
    const gpu = est.gpu ? est.gpu.memory_bytes : 0;
    if (gpu > total) parts.push(['headroom', 'headroom', gpu - total]);
    const scale = Math.max(total, gpu) || 1;
    const svg = $('bar');
    clear(svg);
    const W = width(svg), H = 120;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    let x = 0;
    for (const [cls, name, bytes] of parts) {
      if (bytes <= 0) continue;
      const wpx = (bytes / scale) * W;
      const r = svgEl('rect', { x: x, y: 20, width: Math.max(wpx, 0.5), height: 70, class: cls });
      tooltip(r, name + ': ' + commas(bytes) + ' B (' + fmtBytes(bytes) + ')');
      svg.appendChild(r);
      x += wpx;
    }
    if (gpu) {
      const gx = (gpu / scale) * W;
      svg.appendChild(svgEl('line', { x1: gx, x2: gx, y1: 8, y2: 104, class: 'gpu-line' }));
      const t = svgEl('text', { x: Math.max(4, Math.min(gx + 4, W - 110)), y: 116 });
      t.textContent = 'GPU ' + fmtBytes(gpu);
      svg.appendChild(t);
    }
    const legend = $('bar-legend');
    clear(legend);
    for (const [cls, name, bytes] of parts) {
      if (bytes <= 0) continue;
      legend.appendChild(el('li', name + ' ' + fmtBytes(bytes), 'sw-' + cls));
    }
  }

  function drawInventory(est) {
    const tbody = $('inventory').tBodies[0];
    clear(tbody);
    for (const t of est.per_layer.tensors) {
      const tr = el('tr');
      tr.appendChild(el('td', t.name, 'mono'));
      const shape = el('td', t.shape + ' = ' + t.dims.join('×'), 'mono');
      tr.appendChild(shape);
      tr.appendChild(el('td', t.dtype));
      const b = el('td', commas(t.bytes), 'num');
      b.dataset.tensor = t.name;
      tr.appendChild(b);
      tr.appendChild(el('td', t.backward));
      const why = el('td', t.why);
      why.title = t.source;
      tr.appendChild(why);
      tbody.appendChild(tr);
    }
    const tr = el('tr');
    tr.appendChild(el('td', 'per layer', 'mono'));
    tr.appendChild(el('td', 'linear in s ' + commas(est.per_layer.linear_bytes) + ', quadratic ' + commas(est.per_layer.quadratic_bytes)));
    tr.appendChild(el('td', ''));
    const sum = el('td', commas(est.per_layer.activation_bytes), 'num');
    sum.id = 'per-layer-bytes';
    tr.appendChild(sum);
    tr.appendChild(el('td', ''));
    tr.appendChild(el('td', ''));
    tbody.appendChild(tr);
    $('inventory-note').textContent = '(' + est.profile + ' profile, recompute ' + est.per_layer.recompute + ', one GPU)';
  }

  function drawExplain(est) {
    const box = $('explain');
    clear(box);
    for (const x of est.explain) {
      const d = el('details', null, 'explain');
      d.appendChild(el('summary', x.title + ': ' + fmtBytes(x.bytes)));
      d.appendChild(el('p', '= ' + x.formula, 'mono'));
      d.appendChild(el('p', '= ' + x.substituted + ' B', 'mono'));
      d.appendChild(el('p', 'source: ' + x.source, 'note'));
      box.appendChild(d);
    }
  }

  function drawTimeline(tl) {
    // One line per pipeline stage (highest event of each op), on common axes; the most loaded
    // stage is drawn last and bold, its peak marked, its recompute events shaded.
    const svg = $('timeline');
    clear(svg);
    const W = width(svg), H = 220, pad = 28;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const worst = tl.stages[tl.peak_stage];
    if (!worst.events.length) return;
    let max = 1, min = Infinity, longest = 1;
    for (const st of tl.stages) {
      for (const e of st.events) max = Math.max(max, e.live_bytes);
      min = Math.min(min, st.static_bytes);
      longest = Math.max(longest, st.events.length);
    }
    const X = (i, n) => pad + (i / Math.max(n - 1, 1)) * (W - pad - 4);
    const Y = (b) => H - pad - ((b - min) / Math.max(max - min, 1)) * (H - 2 * pad);
    svg.appendChild(svgEl('line', { x1: pad, x2: W, y1: H - pad, y2: H - pad, class: 'axis' }));
    const ev = worst.events;
    ev.forEach((e, i) => {
      if (e.recompute > 0) svg.appendChild(svgEl('rect', { x: X(i, ev.length) - 1, y: pad, width: Math.max((W - pad) / ev.length, 2), height: H - 2 * pad, class: 'recompute-band' }));
    });
    const order = tl.stages.filter((s) => s !== worst).concat([worst]);
    for (const st of order) {
      if (!st.events.length) continue;
      const pts = st.events.map((e, i) => X(i, st.events.length).toFixed(1) + ',' + Y(e.live_bytes).toFixed(1));
      const line = svgEl('polyline', { points: pts.join(' '), class: 'live' + (st === worst ? '' : ' other') });
      tooltip(line, 'stage ' + st.stage + ': peak ' + commas(st.peak_bytes) + ' B at ' + st.peak_at);
      svg.appendChild(line);
    }
    const pi = ev.findIndex((e) => e.label === worst.peak_at);
    if (pi >= 0) {
      const dot = svgEl('circle', { cx: X(pi, ev.length), cy: Y(ev[pi].live_bytes), r: 5, class: 'peak-dot' });
      tooltip(dot, 'peak ' + commas(worst.peak_bytes) + ' B at ' + worst.peak_at);
      svg.appendChild(dot);
    }
    const lab = svgEl('text', { x: pad, y: 14 });
    lab.textContent = 'stage ' + worst.stage + ' (bold): ' + fmtBytes(worst.peak_bytes) + ' peak at ' + worst.peak_at +
      (tl.stages.length > 1 ? '; ' + (tl.stages.length - 1) + ' other stages faint' : '') + '; recompute shaded';
    svg.appendChild(lab);
    const low = svgEl('text', { x: pad, y: H - 8 });
    // The axis starts at the smallest static memory of any stage (the floor every line starts from);
    // the summary's static is the most loaded stage's.
    low.textContent = fmtBytes(min) + ' (lowest stage static) → the highest event of each forward, loss and backward op →';
    svg.appendChild(low);
    $('timeline-note').textContent = '(' + tl.schedule + ', ' + tl.micro_batches + ' micro-batches, recompute overhead ' + pct(tl.recompute_overhead_pct) + ')';
    const sp = $('stage-peaks');
    clear(sp);
    if (tl.stages.length > 1) for (const s of tl.stages) sp.appendChild(el('span', 'stage ' + s.stage + ': ' + fmtBytes(s.peak_bytes) + ' at ' + s.peak_at));
  }

  function drawKv(est) {
    const dl = $('kv');
    clear(dl);
    dl.appendChild(el('dt', 'whole model'));
    dl.appendChild(el('dd', commas(est.kv_cache.total_bytes) + ' B (' + fmtBytes(est.kv_cache.total_bytes) + ')'));
    dl.appendChild(el('dt', 'per GPU'));
    dl.appendChild(el('dd', commas(est.kv_cache.per_gpu_bytes) + ' B (' + fmtBytes(est.kv_cache.per_gpu_bytes) + ')'));
    dl.appendChild(el('dt', 'formula'));
    dl.appendChild(el('dd', '2 · p · L · kv · d · s · b, kept apart from training activations'));
  }

  function drawComparisons(req, est) {
    const tbody = $('policies').tBodies[0];
    clear(tbody);
    const n = est.stages[0].chunk_layers;
    const k = Math.max(2, Math.round(Math.sqrt(n)));
    for (const policy of ['none', 'selective', 'full', 'every:' + k]) {
      const r = call({ ...req, summary: true, config: { ...req.config, recompute: policy } });
      const tr = el('tr');
      tr.appendChild(el('td', policy, 'mono'));
      tr.appendChild(el('td', r.ok ? fmtBytes(r.peak_bytes) : '—', 'num'));
      tr.appendChild(el('td', r.ok ? pct(r.recompute_overhead_pct) : '—', 'num'));
      tr.appendChild(el('td', r.ok && r.gpu ? (r.fits ? 'yes' : 'no') : ''));
      tbody.appendChild(tr);
    }
    const pb = $('profiles').tBodies[0];
    clear(pb);
    for (const profile of ['megatron', 'textbook', 'pytorch', 'hf']) {
      const r = call({ ...req, summary: true, config: { ...req.config, profile } });
      const tr = el('tr');
      tr.appendChild(el('td', profile + (profile === est.profile ? ' (shown)' : '')));
      tr.appendChild(el('td', r.ok ? commas(r.per_layer.activation_bytes) : '—', 'num'));
      tr.appendChild(el('td', r.ok ? fmtBytes(r.peak_bytes) : '—', 'num'));
      pb.appendChild(tr);
    }
  }

  // The heavier answers (planner, fit, sweep) run right after the main panels.
  function drawPlanFitSweep(req, est) {
    const planBox = $('plan');
    const fitBox = $('fit');
    if (est.gpu) {
      const plan = call({ ...req, command: 'plan' });
      planBox.textContent = plan.ok ? (plan.found ? 'Planner: cheapest policy that fits is ' + plan.policy + (plan.offload ? ' + offload' : '') +
        ', peak ' + fmtBytes(plan.peak_bytes) + ', extra FLOPs ' + pct(plan.recompute_overhead_pct) + ' (' + plan.evaluated + ' policies simulated).'
        : 'Planner: no recompute policy fits this GPU.') : plan.error.message;
      const fit = call({ ...req, command: 'fit' });
      fitBox.textContent = fit.ok ? 'Largest micro-batch that fits: ' + fit.max_micro_batch + '; largest sequence at this micro-batch: ' + commas(fit.max_seq) + '.' : fit.error.message;
      fitBox.dataset.maxMicroBatch = fit.ok ? String(fit.max_micro_batch) : '';
    } else {
      planBox.textContent = 'Pick a GPU for the planner.';
      fitBox.textContent = 'Pick a GPU to see the largest micro-batch and sequence that fit.';
    }
    const bs = [1, 2, 4, 8];
    const ss = [1024, 2048, 4096, 8192, 16384];
    const sw = call({ ...req, command: 'sweep', sweep: { micro_batches: bs, seqs: ss } });
    const svg = $('heatmap');
    clear(svg);
    if (!sw.ok) return;
    const W = width(svg), H = 120, left = 40, top = 4, cw = (W - left) / ss.length, ch = (H - top - 16) / bs.length;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const budget = est.gpu ? est.gpu.memory_bytes : Math.max(...sw.peak_bytes.flat());
    sw.peak_bytes.forEach((row, i) => {
      const yl = svgEl('text', { x: 2, y: top + i * ch + ch / 2 + 4 });
      yl.textContent = 'b=' + bs[i];
      svg.appendChild(yl);
      row.forEach((v, j) => {
        const ratio = v < 0 ? 2 : v / budget;
        const hue = ratio <= 1 ? 130 - 70 * ratio : 0;
        const light = ratio <= 1 ? 45 : Math.max(30, 55 - 10 * Math.min(ratio - 1, 2));
        const r = svgEl('rect', { x: left + j * cw + 1, y: top + i * ch + 1, width: cw - 2, height: ch - 2, fill: 'hsl(' + hue + ',65%,' + light + '%)' });
        tooltip(r, 'micro-batch ' + bs[i] + ', seq ' + ss[j] + ': ' + (v < 0 ? 'invalid' : fmtBytes(v)) + (est.gpu ? (v >= 0 && v <= budget ? ' (fits)' : ' (does not fit)') : ''));
        svg.appendChild(r);
      });
    });
    ss.forEach((s, j) => {
      const t = svgEl('text', { x: left + j * cw + cw / 2 - 18, y: H - 2 });
      t.textContent = 's=' + s;
      svg.appendChild(t);
    });
  }

  function drawExample(est) {
    const panel = $('example-panel');
    if (!currentExample) { panel.hidden = true; return; }
    const ex = examples.find((e) => e.id === currentExample);
    if (!ex) { panel.hidden = true; return; }
    panel.hidden = false;
    $('example-title').textContent = ex.title + ' (' + ex.seed + ', ' + ex.section + ')';
    const tbody = $('example-checks').tBodies[0];
    clear(tbody);
    for (const c of ex.checks) {
      let value = null;
      if (c.quantity.startsWith('tensor:')) {
        const t = est.per_layer.all_tensors.find((x) => x.name === c.quantity.slice(7));
        value = t ? t.bytes : null;
      } else if (c.quantity === 'static.optimizer_plus_master_bytes') {
        value = est.static.optimizer_bytes + est.static.master_bytes;
      } else {
        const [a, b] = c.quantity.split('.');
        value = est[a] ? est[a][b] : null;
      }
      const tr = el('tr');
      tr.appendChild(el('td', c.quantity, 'mono'));
      tr.appendChild(el('td', c.stated));
      tr.appendChild(el('td', commas(c.seed_formula_bytes) + ' (' + c.seed_formula + ')', 'num'));
      const v = el('td', value === null ? '—' : commas(value), 'num');
      v.dataset.quantity = c.quantity;
      tr.appendChild(v);
      tr.appendChild(el('td', c.note || (value === c.seed_formula_bytes ? 'agrees' : '')));
      tbody.appendChild(tr);
    }
  }

  // ---- update cycle ------------------------------------------------------------------------
  let heavyTimer = null;
  function update() {
    if (!engine) return;
    const t0 = performance.now();
    clearErrors();
    const req = readForm();
    // A malformed model in the link is not silently replaced by the preset: the message stays
    // beside the model box and the previous result stays, as for any engine error.
    const est = linkError ? { ok: false, error: linkError } : call(req);
    linkError = null;
    if (!est.ok) {
      showErrors(est.error);
      document.body.dataset.state = 'error';
      document.body.dataset.ready = '1';  // processed: the message is beside its field
      writeHash();
      return;  // the previous result stays visible
    }
    const tl = call({ ...req, command: 'timeline', events: 'all_ops', compact_events: true });
    for (const st of tl.stages)
      st.events = st.events.map((a) => ({ label: a[0], live_bytes: a[1], activations: a[2], recompute: a[3], transients: a[4] }));
    document.body.dataset.state = 'ok';
    lastGood = { req, est, tl };
    drawSummary(est, tl);
    drawInventory(est);
    drawExplain(est);
    drawTimeline(tl);
    drawKv(est);
    drawComparisons(req, est);
    drawExample(est);
    writeHash();
    document.body.dataset.mainMs = (performance.now() - t0).toFixed(2);
    clearTimeout(heavyTimer);
    heavyTimer = setTimeout(() => {
      drawPlanFitSweep(req, est);
      const ms = performance.now() - t0;
      timings.push(ms);
      document.body.dataset.ready = '1';
      document.body.dataset.renderMs = ms.toFixed(2);
      postHeight();
    }, 0);
  }

  function postHeight() {
    if (window.parent !== window) window.parent.postMessage({ type: 'actmem:height', height: document.documentElement.scrollHeight }, '*');
  }

  // ---- exports -----------------------------------------------------------------------------
  function download(name, text, type) {
    const a = el('a');
    a.href = URL.createObjectURL(new Blob([text], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  // ---- start -------------------------------------------------------------------------------
  let examples = [];  // the seeds' worked examples (presets/examples), bodies included
  function fillSelects() {
    const list = call({ command: 'presets' });
    for (const m of list.models) { const o = el('option', m.id + (m.name ? ' — ' + m.name : '')); o.value = m.id; $('preset').appendChild(o); }
    for (const g of list.gpus) { const o = el('option', g.id + (g.name ? ' — ' + g.name : '')); o.value = g.id; $('gpu').appendChild(o); }
    examples = list.examples.map((x) => ({ id: x.id, ...x.body }));
    for (const x of examples) { const o = el('option', x.id + ' — ' + x.title); o.value = x.id; $('example').appendChild(o); }
    $('preset').value = 'llama-3.1-8b';
    $('gpu').value = 'h100-80gb';
  }

  function applyExample(id) {
    currentExample = id || null;
    if (!id) { update(); return; }
    const ex = examples.find((x) => x.id === id);
    if (!ex) return;
    for (const k of ['micro_batch', 'seq', 'micro_batches', 'dropout', 'layer_split', 'gpu_memory']) $(k).value = '';
    $('tp').value = $('pp').value = $('vpp').value = $('cp').value = $('dp').value = $('ep').value = '1';
    $('zero').value = '0';
    $('sp').checked = $('offload').checked = false;
    $('recompute').value = 'none';
    const c = ex.config;
    for (const [k, v] of Object.entries(c)) {
      if (k === 'sp') $('sp').checked = !!v;
      else if (k === 'offload') $('offload').checked = !!v;
      else if (k === 'attention_dropout' || k === 'hidden_dropout') { if (k === 'attention_dropout') $('dropout').value = String(v); }
      else if ($(k)) $(k).value = String(v);
    }
    if (ex.preset) { customModel = null; $('preset').value = ex.preset; } else { customModel = ex.model; $('model-json').value = JSON.stringify(ex.model, null, 2); }
    update();
  }

  function start(M) {
    engine = M;
    // The engine's one entry point for pages that embed the calculator (docs/embedding.md): the
    // same request JSON as `actmem requests`, the same answer bytes.
    window.actmem = Object.freeze({ evaluate: (request) => M.evaluate(String(request)) });
    fillSelects();
    readHash();
    if (currentExample) $('example').value = currentExample;
    wire();
    update();
  }

  function wire() {
    const form = $('inputs');
    form.addEventListener('input', (e) => { if (e.target.id !== 'model-json' && e.target.id !== 'example') update(); });
    form.addEventListener('change', (e) => { if (e.target.tagName === 'SELECT' && e.target.id !== 'example') update(); });
    $('example').addEventListener('change', () => applyExample($('example').value));
    $('use-model').addEventListener('click', () => {
      clearErrors();
      try { customModel = JSON.parse($('model-json').value); } catch (e) { showErrors({ field: 'model', message: 'model: malformed JSON (' + e.message + ')' }); return; }
      update();
    });
    $('clear-model').addEventListener('click', () => { customModel = null; $('model-json').value = ''; update(); });
    $('model-file').addEventListener('change', async (e) => {
      const f = e.target.files[0];
      if (!f) return;
      $('model-json').value = await f.text();
      $('use-model').click();
    });
    const drop = $('custom-model');
    drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.open = true; });
    drop.addEventListener('drop', async (e) => {
      e.preventDefault();
      const f = e.dataTransfer.files[0];
      if (f) { $('model-json').value = await f.text(); $('use-model').click(); }
    });
    $('copy-link').addEventListener('click', async () => {
      writeHash();
      try { await navigator.clipboard.writeText(location.href); $('copy-link').textContent = 'Copied'; } catch (e) { $('copy-link').textContent = 'Link in the address bar'; }
      setTimeout(() => { $('copy-link').textContent = 'Copy link'; }, 1500);
    });
    $('export-json').addEventListener('click', () => {
      if (!lastGood) return;
      const tl = call({ ...lastGood.req, command: 'timeline' });
      download('actmem.json', JSON.stringify({ estimate: lastGood.est, timeline: tl }, null, 2), 'application/json');
    });
    $('export-csv').addEventListener('click', () => {
      if (!lastGood) return;
      const tl = call({ ...lastGood.req, command: 'timeline' });
      const lines = ['stage,event,label,live_bytes,activations,recompute,transients'];
      for (const s of tl.stages) s.events.forEach((e, i) => lines.push([s.stage, i, e.label, e.live_bytes, e.activations, e.recompute, e.transients].join(',')));
      const inv = ['', 'tensor,shape,dtype,bytes,backward'];
      for (const t of lastGood.est.per_layer.tensors) inv.push([t.name, t.shape, t.dtype, t.bytes, '"' + t.backward + '"'].join(','));
      download('actmem.csv', lines.concat(inv).join('\n') + '\n', 'text/csv');
    });
    $('theme-toggle').addEventListener('click', () => {
      const dark = document.documentElement.dataset.theme === 'dark' ||
        (!document.documentElement.dataset.theme && matchMedia('(prefers-color-scheme: dark)').matches);
      document.documentElement.dataset.theme = dark ? 'light' : 'dark';
      const p = new URLSearchParams(location.hash.slice(1));
      p.set('theme', document.documentElement.dataset.theme);
      history.replaceState(null, '', '#' + p.toString());
    });
    window.addEventListener('hashchange', () => { readHash(); update(); });
    if (window.ResizeObserver) new ResizeObserver(postHeight).observe(document.documentElement);
  }

  createActmem().then(start).catch((e) => { $('verdict').textContent = 'The engine failed to load: ' + e; });
})();
