// actmem page: reads the form, asks the engine (in a Web Worker) for the view of the current
// inputs, and draws the answer. Every number, choice and suggestion comes from the engine's view
// answer (docs/schema.md, "The view answer"); this file formats and draws. Nothing from the URL or
// a pasted file is ever inserted as HTML (textContent and setAttribute only).
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const SVGNS = 'http://www.w3.org/2000/svg';
  const DEFAULT_PRESET = 'llama-3.1-8b';
  // The first view: a configuration that runs (8B on 8 H100s, ZeRO-1, selective recompute).
  const FIRST_VIEW = { preset: DEFAULT_PRESET, gpu: 'h100-80gb', dp: '8', zero: '1' };

  let worker = null;
  // A pasted or dropped config.json, as the text the user gave: the engine reads it (model_text),
  // so a key given twice, Python's Infinity or a syntax error is answered as on the command line.
  let customModelText = null;
  let customName = '';       // its name and size from the engine's last answer
  let currentExample = null; // a worked example id: its preset and config are the request's base
  let shown = null;          // { key, req, view }: the answer on screen and the request it answers (key null for a link's fallback)
  let lastError = null;      // the error of the current inputs, when they have one
  let seq = 0;               // request ids; only the answer to `wanted` is drawn as current
  let wanted = 0;
  let wantedKey = '';
  let bootDone = false;
  let examples = [];
  const exportsPending = new Map();
  const timings = (window.actmemTimings = []);
  window.actmemRequests = 0;  // view requests sent to the engine (tests count them)

  // ---- small DOM helpers ------------------------------------------------------------------
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  const width = (svg) => Math.max(280, Math.round(svg.getBoundingClientRect().width) || 600);

  // ---- formatting (binary units everywhere; exact bytes one hover away) --------------------
  const GiB = 1073741824;
  function fmt(b, digits) {
    if (b === undefined || b === null || b < 0) return '—';
    const d = digits === undefined ? 1 : digits;
    if (b >= GiB) return (b / GiB).toFixed(d) + ' GiB';
    if (b >= 1048576) return (b / 1048576).toFixed(d) + ' MiB';
    if (b >= 1024) return (b / 1024).toFixed(d) + ' KiB';
    return b + ' B';
  }
  const commas = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const exact = (b) => commas(b) + ' bytes';
  const pct = (x) => (Math.round(x * 10) / 10).toFixed(1) + '%';
  const tip = (node, text) => { node.dataset.tip = text; return node; };

  // ---- the form <-> request ---------------------------------------------------------------
  const numeric = ['micro_batch', 'seq', 'micro_batches', 'tp', 'pp', 'vpp', 'cp', 'dp', 'ep'];
  const selects = ['dtype', 'attention', 'optimizer', 'profile', 'schedule', 'zero'];
  const hashKeys = ['preset', 'gpu', 'gpu_memory', 'micro_batch', 'seq', 'micro_batches', 'dtype', 'attention', 'dropout',
    'optimizer', 'profile', 'recompute', 'tp', 'pp', 'vpp', 'schedule', 'layer_split', 'cp', 'dp', 'zero', 'ep'];

  // What the user typed, as the engine reads it: integers as numbers, anything else as text the
  // engine rejects by field name.
  function typed(v) {
    const t = v.trim();
    if (t === '') return undefined;
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) ? Number(t) : t;
  }

  function readForm() {
    const config = {};
    for (const id of numeric) {
      const v = typed($(id).value);
      if (v !== undefined) config[id] = v;
    }
    for (const id of selects) if ($(id).value !== '') config[id] = id === 'zero' ? typed($(id).value) : $(id).value;
    const d = typed($('dropout').value);
    if (d !== undefined) config.dropout = d;
    const r = $('recompute').value.trim();
    if (r !== '') config.recompute = r;
    if ($('offload').checked) config.offload = true;
    if ($('sp').checked) config.sp = true;
    const split = $('layer_split').value.trim();
    if (split !== '') config.layer_split = split.split(/[\s,]+/).filter(Boolean).map(typed);
    if ($('gpu').value) config.gpu = $('gpu').value;
    // The field is in GiB: a plain number gets the unit; the engine parses the size exactly.
    const mem = $('gpu_memory').value.trim();
    if (mem !== '') config.gpu_memory = /^[\d.]+$/.test(mem) ? mem + 'GiB' : mem;
    const req = { command: 'view', config };
    if (currentExample) req.example = currentExample;
    else if (customModelText !== null) req.model_text = customModelText;
    else req.preset = $('preset').value;
    if ($('all-stages').checked) req.stages = 'all';
    return req;
  }

  // ---- URL hash state ---------------------------------------------------------------------
  function writeHash() {
    const p = new URLSearchParams();
    for (const k of hashKeys) {
      if (k === 'preset' && (customModelText !== null || currentExample)) continue;
      const v = $(k).value;
      if (v !== '') p.set(k, v);
    }
    if ($('sp').checked) p.set('sp', '1');
    if ($('offload').checked) p.set('offload', '1');
    if ($('all-stages').checked) p.set('all_stages', '1');
    if (customModelText !== null) p.set('model', customModelText);
    if (currentExample) p.set('example', currentExample);
    const cur = new URLSearchParams(location.hash.slice(1));
    for (const k of ['theme', 'embed']) if (cur.has(k)) p.set(k, cur.get(k));
    history.replaceState(null, '', '#' + p.toString());
    $('open-full').href = '#' + fullHash(p);
  }
  // The same state without embed=1: the link from the embed to the full calculator.
  function fullHash(p) {
    const q = new URLSearchParams(p);
    q.delete('embed');
    return q.toString();
  }

  function setSelect(node, v) {
    if (![...node.options].some((o) => o.value === v)) node.appendChild(el('option', v)).value = v;  // shown; the engine says why
    node.value = v;
  }

  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const fresh = [...p.keys()].filter((k) => k !== 'theme' && k !== 'embed').length === 0;
    if (fresh) for (const [k, v] of Object.entries(FIRST_VIEW)) p.set(k, v);
    for (const k of hashKeys) {
      if (!p.has(k)) continue;
      const node = $(k);
      if (node.tagName === 'SELECT') setSelect(node, p.get(k)); else node.value = p.get(k);
    }
    $('sp').checked = p.get('sp') === '1';
    $('offload').checked = p.get('offload') === '1';
    $('all-stages').checked = p.get('all_stages') === '1';
    customModelText = null;
    if (p.has('model')) {
      $('model-json').value = p.get('model');
      customModelText = p.get('model');
    }
    currentExample = p.get('example') || null;
    $('example').value = currentExample && [...$('example').options].some((o) => o.value === currentExample) ? currentExample : '';
    const theme = p.get('theme');
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
    document.body.classList.toggle('embed', p.get('embed') === '1');
    showModelChoice();
  }

  // The model box names what the answer is for: a preset, or the pasted config with its size.
  function showModelChoice() {
    const sel = $('preset');
    let opt = sel.querySelector('option[value="__custom__"]');
    if (customModelText !== null || currentExample) {
      if (!opt) { opt = el('option'); opt.value = '__custom__'; sel.insertBefore(opt, sel.firstChild); }
      opt.textContent = currentExample ? 'worked example: ' + currentExample + (customName ? ' (' + customName + ')' : '')
        : 'pasted config.json' + (customName ? ': ' + customName : '');
      sel.value = '__custom__';
    } else if (opt) {
      opt.remove();
    }
  }

  // ---- errors beside their fields (overlaid: an error moves nothing on the page) -----------
  function clearErrors() {
    for (const e of document.querySelectorAll('[data-err]')) { e.textContent = ''; e.style.top = ''; }
    for (const e of document.querySelectorAll('.invalid')) e.classList.remove('invalid');
  }
  function slotFor(field) {
    const f = String(field || '').replace(/\[\d+\]$/, '');
    return document.querySelector('[data-err="' + CSS.escape(f) + '"]') ||
      (f.startsWith('model') || f === 'example' ? document.querySelector('[data-err="model"]') : null) ||
      document.querySelector('[data-err="*"]');
  }
  function showError(err) {
    const field = String(err.field || '').replace(/\[\d+\]$/, '');
    const slot = slotFor(field);
    slot.textContent = err.message;
    const anchor = slot.previousElementSibling;
    if (anchor && slot.classList.contains('err') && !slot.classList.contains('general')) slot.style.top = (anchor.offsetTop + anchor.offsetHeight) + 'px';
    const input = document.querySelector('[data-field="' + CSS.escape(field) + '"]');
    if (input) input.classList.add('invalid');
    if (field.startsWith('model')) { $('custom-model').open = true; $('model-json').classList.add('invalid'); }
  }

  // ---- honest state: the results say when they are not the answer to the inputs -------------
  function setStatus(kind, text) {
    const s = $('status');
    s.dataset.kind = kind;
    s.textContent = text;
    $('results').dataset.stale = kind === 'current' ? '0' : '1';
  }

  // ---- the engine in a worker ---------------------------------------------------------------
  function startWorker() {
    const inline = $('worker-src');
    if (inline) {
      // Single-file page (file://): the worker is built from the inlined module and worker text.
      const src = $('engine-src').textContent + '\n' + inline.textContent;
      return new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    }
    return new Worker('worker.js');
  }

  function send(lane, request) {
    const id = ++seq;
    worker.postMessage({ id, lane, request: JSON.stringify(request) });
    return id;
  }

  let debounce = null;
  let debouncing = false;  // an input waits for its request
  let awaiting = false;    // the current request is with the engine
  let inputAt = 0;
  function schedule(delay) {
    clearTimeout(debounce);
    debouncing = true;
    document.body.dataset.ready = '0';  // not the answer to these inputs until it arrives
    if (!inputAt) inputAt = performance.now();
    debounce = setTimeout(update, delay);
  }

  // Sends the view request for the current inputs (once per distinct input).
  let wantedReq = null;
  let fallbackTries = 0;
  function update() {
    if (!bootDone) return;
    clearTimeout(debounce);
    debouncing = false;
    writeHash();
    const req = readForm();
    const key = JSON.stringify(req);
    if (key === wantedKey) {
      // Nothing new to ask: the answer (or the error) on screen is already this input's.
      if ((shown && shown.key === key) || lastError) finish();
      return;
    }
    clearErrors();
    lastError = null;
    wantedKey = key;
    wantedReq = req;
    fallbackTries = 0;
    wanted = send('view', req);
    awaiting = true;
    document.body.dataset.ready = '0';
    window.actmemRequests++;
    setStatus('updating', 'Updating…');
  }

  function onMessage(e) {
    const m = e.data;
    if (m.lane === 'failed') { setStatus('error', 'The engine failed to load: ' + m.text); $('verdict').textContent = 'The engine failed to load.'; return; }
    if (m.lane === 'boot') { boot(JSON.parse(m.text)); return; }
    if (m.lane === 'export') { const done = exportsPending.get(m.id); exportsPending.delete(m.id); if (done) done(JSON.parse(m.text)); return; }
    if (m.lane === 'fallback') { onFallback(m); return; }
    if (m.lane === 'compare') { onCompare(m); return; }
    if (m.lane === 'advise') { onAdvise(m); return; }
    if (m.id !== wanted) return;  // superseded by a newer input
    awaiting = false;
    const t0 = performance.now();
    const ans = JSON.parse(m.text);
    document.body.dataset.parseMs = (performance.now() - t0).toFixed(2);
    document.body.dataset.engineMs = m.ms.toFixed(2);
    if (!ans.ok) { answerError(ans.error, wantedReq); return; }
    lastError = null;
    document.body.dataset.state = 'ok';
    draw(ans, wantedKey, wantedReq);
    if (snapshotBytes) runCompare();  // the comparison follows the configuration shown
    setStatus('current', 'This is the answer for the inputs as shown. Hover a number for its exact bytes and what it means.');
    if (!document.body.dataset.firstVerdictMs) document.body.dataset.firstVerdictMs = performance.now().toFixed(1);
    finish();
  }

  function finish() {
    if (debouncing || awaiting) return;
    if (inputAt) { timings.push(performance.now() - inputAt); document.body.dataset.renderMs = (performance.now() - inputAt).toFixed(2); inputAt = 0; }
    if (!window.actmem && !mainEngineLoading) loadMainEngine(); else if (window.actmem) ready();
    postHeight();
  }
  // "ready": the page shows the answer (or the error) for its current inputs, none pending; an
  // input or a request sets it back to "0".
  function ready() { if (!debouncing && !awaiting) document.body.dataset.ready = '1'; }

  const sentence = (m) => (/[.!?]$/.test(m) ? m : m + '.');

  // An error in the inputs: the message beside its field, the results marked as the previous
  // inputs' answer. With nothing shown yet (a link or an embed with a bad value), the page shows
  // the answer without the offending value, marked so.
  function answerError(err, req) {
    lastError = err;
    showError(err);
    document.body.dataset.state = 'error';
    if (shown) {
      setStatus('error', 'Not updated: ' + sentence(err.message) + ' The results below are for the previous inputs.');
      finish();
      return;
    }
    setStatus('error', 'This link has a value the engine refuses: ' + sentence(err.message) + ' Shown below: the answer without it.');
    fallback(req ? withoutField(req, err.field) : { command: 'view', preset: DEFAULT_PRESET, config: {} });
  }
  let fallbackReq = null;
  let fallbackId = 0;
  // Asks for the answer without the refused value, at most 8 times (one value dropped each time).
  function fallback(next) {
    if (!next || ++fallbackTries > 8) { finish(); return; }
    fallbackReq = next;
    fallbackId = send('fallback', next);
  }
  function onFallback(m) {
    if (m.id !== fallbackId) return;
    const ans = JSON.parse(m.text);
    if (!ans.ok) { fallback(withoutField(fallbackReq, ans.error.field)); return; }
    draw(ans, null, fallbackReq);
    finish();
  }
  // The request without the value a message names (the engine's default takes its place).
  function withoutField(req, field) {
    const r = JSON.parse(JSON.stringify(req));
    const f = String(field || '').replace(/\[\d+\]$/, '');
    if (f.startsWith('config.') && r.config && f.slice(7).split('.')[0] in r.config) { delete r.config[f.slice(7).split('.')[0]]; return r; }
    if (f === 'preset' || f.startsWith('model') || f === 'example') { delete r.model; delete r.model_text; delete r.example; r.preset = DEFAULT_PRESET; return r; }
    return null;
  }

  // ---- drawing the view ---------------------------------------------------------------------
  function draw(v, key, req) {
    const t0 = performance.now();
    shown = { key, req, view: v };
    customName = v.model.name + ' (' + (v.model.params / 1e9).toFixed(2) + ' B parameters)';
    showModelChoice();
    drawVerdict(v);
    drawBar(v);
    drawTimeline(v);
    drawInventory(v.estimate);
    drawPolicies(v);
    drawGrid(v);
    drawKv(v.estimate);
    drawExplain(v.estimate);
    drawExample(v);
    const note = v.layout.schedule_note || '';
    $('schedule-note').textContent = note ? 'Schedule used: ' + note : '';
    document.body.dataset.drawMs = (performance.now() - t0).toFixed(2);
  }

  function layoutText(l) {
    return 'tp ' + l.tp + (l.sp ? ' (SP)' : '') + ' × pp ' + l.pp + (l.vpp > 1 ? ' (vpp ' + l.vpp + ')' : '') + ' × cp ' + l.cp + ' × dp ' + l.dp;
  }

  function suggestionText(s, v) {
    const c = s.change;
    const parts = [];
    if (c.dp !== undefined) parts.push(s.gpus + ' GPUs (dp ' + c.dp + ')');
    if (c.zero !== undefined) parts.push('ZeRO stage ' + c.zero);
    if (c.micro_batch !== undefined) parts.push('micro-batch ' + c.micro_batch);
    if (c.recompute !== undefined) parts.push('recompute ' + c.recompute + (s.recompute_overhead_pct > 0 ? ' (+' + pct(s.recompute_overhead_pct) + ' FLOPs)' : ''));
    if (c.offload) parts.push('offload kept activations to host');
    return parts.join(' + ') + ': peak ' + fmt(s.peak_bytes) + (s.fits ? ', fits' : '');
  }

  function drawVerdict(v) {
    const d = v.verdict, l = v.layout, verdict = $('verdict');
    const gpus = d.gpus + (d.gpus === 1 ? ' GPU' : ' GPUs');
    // The verdict is on the device's figure (the engine's): what the driver would count as used
    // at the step's fullest, against the total it reports.
    if (d.capacity_bytes !== undefined) {
      const gap = Math.abs(d.headroom_bytes);
      verdict.textContent = d.fits
        ? 'Fits: ' + fmt(d.total_bytes) + ' of ' + fmt(d.capacity_bytes) + ' per GPU, ' + fmt(gap) + ' to spare, on ' + gpus + '.'
        : d.headroom_bytes >= 0
          ? 'Does not fit: the allocator runs out of room (fragmentation) although ' + fmt(d.total_bytes) + ' is below the ' + fmt(d.capacity_bytes) + ' of each of ' + gpus + '.'
          : 'Does not fit: needs ' + fmt(d.total_bytes) + ' per GPU, ' + fmt(gap) + ' more than the ' + fmt(d.capacity_bytes) + ' of each of ' + gpus + '.';
      verdict.className = 'verdict ' + (d.fits ? 'ok' : 'bad');
    } else {
      verdict.textContent = 'Peak ' + fmt(d.total_bytes) + ' per GPU on ' + gpus + ' as the driver counts it (choose a GPU to check the fit).';
      verdict.className = 'verdict';
    }
    verdict.dataset.peak = String(d.peak_bytes);
    verdict.dataset.total = String(d.total_bytes);
    tip(verdict, 'on the device ' + exact(d.total_bytes) + (d.capacity_bytes !== undefined ? ' of ' + exact(d.capacity_bytes) : '') + '; tensors peak at ' + exact(d.peak_bytes));
    const fit = v.fit && v.fit.ok ? v.fit : null;
    $('verdict-detail').textContent = 'Tensors peak at ' + fmt(d.peak_bytes) + ' at the ' + d.peak_words + (d.stages > 1 ? ' on pipeline stage ' + d.stage + ' of ' + d.stages : '') +
      '; through PyTorch\'s caching allocator ' + fmt(d.allocated_bytes) + ' allocated, ' + fmt(d.reserved_bytes) + ' reserved, plus the fixed costs (CUDA context, NCCL)' +
      '. Layout ' + layoutText(l) + ' = ' + gpus + '; sequence ' + commas(l.seq) + ', micro-batch ' + l.micro_batch + ', ' + l.micro_batches +
      (l.micro_batches === 1 ? ' micro-batch per step, ' : ' micro-batches per step, ') + l.schedule + ', recompute ' + l.recompute + '.' +
      (fit && d.fits ? ' Largest micro-batch that fits: ' + fit.max_micro_batch + '.' : '');
    $('embed-summary').textContent = v.model.name + ' · sequence ' + commas(l.seq) + ' · micro-batch ' + l.micro_batch + ' · ' + layoutText(l) + ' · ' + (d.gpu || 'no GPU chosen');
    const list = $('suggestions');
    clear(list);
    for (const s of v.suggestions) {
      const li = el('li');
      const b = el('button', suggestionText(s, v), 'fix');
      b.type = 'button';
      b.dataset.change = JSON.stringify(s.change);
      b.addEventListener('click', () => applyChange(s.change));
      li.appendChild(b);
      list.appendChild(li);
    }
    $('fixes').hidden = v.suggestions.length === 0 && !(d.capacity_bytes !== undefined && !d.fits);
    if (!d.fits && d.capacity_bytes !== undefined && v.suggestions.length === 0) list.appendChild(el('li', 'No change of micro-batch, ZeRO stage, recompute or data-parallel GPUs (up to 1,024) fits; try tensor or pipeline parallelism.'));
    const dl = $('summary');
    clear(dl);
    const p = v.estimate.peak;
    const rows = [
      ['model', v.model.name + ' (' + commas(v.model.params) + ' parameters)'],
      ['peak (what must fit)', exact(p.bytes) + ' at ' + p.at + ', stage ' + p.stage],
      ['static', exact(p.static_bytes)],
      ['kept activations', exact(p.kept_activations_bytes)],
      ['recomputed', exact(p.recomputed_bytes)],
      ['transients', exact(p.transient_bytes)],
      ['per layer', exact(v.estimate.per_layer.activation_bytes)],
      ['recompute overhead', pct(v.estimate.recompute_overhead_pct)],
    ];
    if (p.fragmentation_bytes > 0) rows.splice(6, 0, ['fragmentation allowance', exact(p.fragmentation_bytes)]);
    rows.splice(1, 0, ['on the device (nvidia-smi)', exact(d.total_bytes)], ['allocated (allocator)', exact(d.allocated_bytes)], ['reserved (allocator)', exact(d.reserved_bytes)]);
    if (d.capacity_bytes !== undefined) rows.push(['headroom', commas(d.headroom_bytes) + ' bytes']);
    for (const n of d.notes || []) rows.push(['note', n]);
    for (const [k, val] of rows) { dl.appendChild(el('dt', k)); const dd = el('dd', val); dd.dataset.key = k; dl.appendChild(dd); }
  }

  function applyChange(change) {
    for (const [k, val] of Object.entries(change)) {
      if (k === 'offload' || k === 'sp') $(k).checked = !!val;
      else if (k === 'zero' || k === 'schedule') setSelect($(k), String(val));
      else if (k === 'layer_split') $(k).value = Array.isArray(val) ? val.join(',') : String(val);
      else $(k).value = String(val);
    }
    update();
  }

  // The device bar (allocated, reserved beyond it, each fixed cost, free) against the GPU's
  // reported total; the tensor bar (what the peak event holds, part by part) below it.
  function drawBar(v) {
    drawStack($('bar'), $('bar-legend'), v.bar, v.bar.capacity_bytes || 0, v.verdict.headroom_bytes);
    drawStack($('tensor-bar'), $('tensor-bar-legend'), v.tensor_bar, 0, 0);
  }

  function drawStack(svg, legend, bar, cap, headroom) {
    clear(svg);
    const W = width(svg), H = 64;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const segs = bar.segments.filter((s) => s.bytes > 0);
    if (headroom > 0) segs.push({ id: 'headroom', label: 'free', bytes: headroom });
    const scale = Math.max(bar.total_bytes, cap) || 1;
    let x = 0;
    for (const s of segs) {
      const w = (s.bytes / scale) * W;
      svg.appendChild(tip(svgEl('rect', { x, y: 6, width: Math.max(w, 0.5), height: 36, class: s.id }), s.label + ': ' + fmt(s.bytes, 2) + ' (' + exact(s.bytes) + ')'));
      x += w;
    }
    if (cap) {
      const gx = Math.min((cap / scale) * W, W - 1);
      svg.appendChild(svgEl('line', { x1: gx, x2: gx, y1: 0, y2: 48, class: 'gpu-line' }));
      const right = gx > W / 2;
      svg.appendChild(svgEl('text', { x: right ? gx - 4 : gx + 4, y: 60, 'text-anchor': right ? 'end' : 'start' }, 'GPU ' + fmt(cap)));
    }
    clear(legend);
    for (const s of segs) legend.appendChild(tip(el('li', s.label + ' ' + fmt(s.bytes), 'sw-' + s.id), exact(s.bytes) + (s.source ? ' — ' + s.source : '')));
  }

  // Y ticks at 1, 2 or 5 x 10^k GiB.
  function ticks(max) {
    const g = max / GiB;
    const raw = g / 5;
    const p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = 0; t <= g + 1e-9; t += step) out.push(t * GiB);
    return out;
  }

  function drawTimeline(v) {
    const tl = v.timeline, svg = $('timeline');
    clear(svg);
    const W = width(svg), H = 240, left = 56, right = 8, top = 22, bottom = 28;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const yMax = tl.y_max * 1.05;
    const X = (i, n) => left + (n > 1 ? i / (n - 1) : 0) * (W - left - right);
    const Y = (b) => H - bottom - (b / yMax) * (H - top - bottom);
    for (const t of ticks(yMax)) {
      svg.appendChild(svgEl('line', { x1: left, x2: W - right, y1: Y(t), y2: Y(t), class: 'grid-line' }));
      svg.appendChild(svgEl('text', { x: left - 6, y: Y(t) + 4, 'text-anchor': 'end' }, (t / GiB).toFixed(t / GiB < 10 && t > 0 && (t / GiB) % 1 ? 1 : 0) + ' GiB'));
    }
    const worst = tl.series[0];
    const n = worst.events;
    const pts = worst.points;
    // Recompute shading, then other stages (faint), then the most loaded stage (bold).
    pts.regenerates.forEach((r, i) => {
      if (!r) return;
      const x0 = X(pts.index[i], n), x1 = i + 1 < pts.index.length ? X(pts.index[i + 1], n) : x0 + 2;
      svg.appendChild(svgEl('rect', { x: x0, y: top, width: Math.max(x1 - x0, 1.5), height: H - top - bottom, class: 'recompute-band' }));
    });
    for (const s of tl.series.slice(1)) {
      const line = pts2(s, X, Y);
      svg.appendChild(tip(svgEl('polyline', { points: line, class: 'live other' }), 'stage ' + s.stage + ': peak ' + fmt(s.peak_bytes) + ' at the ' + s.peak_words));
    }
    const env = [];
    for (let i = 0; i < pts.index.length; i++) env.push(X(pts.index[i], n).toFixed(1) + ',' + Y(pts.live_bytes[i]).toFixed(1));
    for (let i = pts.index.length - 1; i >= 0; i--) env.push(X(pts.index[i], n).toFixed(1) + ',' + Y(pts.low_bytes[i]).toFixed(1));
    svg.appendChild(svgEl('polygon', { points: env.join(' '), class: 'envelope' }));
    svg.appendChild(svgEl('polyline', { points: pts2(worst, X, Y), class: 'live' }));
    if (tl.capacity_bytes !== undefined) {
      svg.appendChild(svgEl('line', { x1: left, x2: W - right, y1: Y(tl.capacity_bytes), y2: Y(tl.capacity_bytes), class: 'gpu-line' }));
      svg.appendChild(svgEl('text', { x: W - right - 4, y: Y(tl.capacity_bytes) - 4, 'text-anchor': 'end', class: 'cap-label' }, 'GPU capacity ' + fmt(tl.capacity_bytes)));
    }
    const pi = worst.peak_point;
    const px = X(pts.index[pi], n), py = Y(pts.live_bytes[pi]);
    svg.appendChild(svgEl('circle', { cx: px, cy: py, r: 5, class: 'peak-dot' }));
    const label = 'peak ' + fmt(worst.peak_bytes) + ': ' + worst.peak_words;
    svg.appendChild(svgEl('text', { x: Math.min(Math.max(px, left + 4), W - right - 4), y: 14, 'text-anchor': px > W / 2 ? 'end' : 'start', class: 'peak-label' }, label));
    svg.appendChild(svgEl('text', { x: left, y: H - 8 }, 'stage ' + worst.stage + ', ' + commas(n) + ' ops of the step in order (each op\'s highest moment) →'));
    // Hover: the nearest point's event in words.
    const hit = svgEl('rect', { x: left, y: top, width: W - left - right, height: H - top - bottom, class: 'hit' });
    hit.addEventListener('mousemove', (ev) => {
      const r = svg.getBoundingClientRect();
      const x = ((ev.clientX - r.left) / r.width) * W;
      let best = 0;
      for (let i = 1; i < pts.index.length; i++) if (Math.abs(X(pts.index[i], n) - x) < Math.abs(X(pts.index[best], n) - x)) best = i;
      showTip(ev, pts.words[best] + ': ' + fmt(pts.live_bytes[best], 2) + ' live (kept activations ' + fmt(pts.activations[best]) +
        ', recomputed ' + fmt(pts.recompute[best]) + ', transients ' + fmt(pts.transients[best]) + ')');
    });
    hit.addEventListener('mouseleave', hideTip);
    svg.appendChild(hit);
    $('timeline-note').textContent = '(' + tl.schedule + ', ' + tl.micro_batches + ' micro-batches' + (tl.stages > 1 ? ', stage ' + worst.stage + ' of ' + tl.stages + ' is the most loaded' : '') +
      ', recompute overhead ' + pct(tl.recompute_overhead_pct) + ')';
    const legend = $('timeline-legend');
    clear(legend);
    legend.appendChild(tip(el('li', 'live memory of stage ' + worst.stage, 'sw-live'), 'the highest moment of each op (bold line); the shaded band reaches down to each op\'s lowest moment'));
    legend.appendChild(tip(el('li', 'backward recomputes here', 'sw-recompute'), 'ops where backward regenerates dropped activations (recompute)'));
    if (tl.capacity_bytes !== undefined) legend.appendChild(el('li', 'GPU capacity', 'sw-capacity'));
    if (tl.series.length > 1) legend.appendChild(el('li', 'other stages', 'sw-other'));
    const sp = $('stage-peaks');
    clear(sp);
    for (const s of tl.series.slice(1)) sp.appendChild(el('span', 'stage ' + s.stage + ': ' + fmt(s.peak_bytes) + ' at the ' + s.peak_words));
  }
  function pts2(s, X, Y) {
    const p = s.points, out = [];
    for (let i = 0; i < p.index.length; i++) out.push(X(p.index[i], s.events).toFixed(1) + ',' + Y(p.live_bytes[i]).toFixed(1));
    return out.join(' ');
  }

  // A stack of layer kinds (Nemotron-H, DeepSeek, gpt-oss, Llama 4): a selector shows each kind's
  // records as the engine lists them (model.layer_kinds: every tensor, no recompute); the default
  // stays layer 0 under the chosen recompute policy (per_layer).
  let inventoryEst = null;
  function drawInventory(est) {
    inventoryEst = est;
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
    const est = inventoryEst;
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
    const plan = $('plan');
    if (!v.plan) plan.textContent = 'Choose a GPU for the planner.';
    else if (!v.plan.ok) plan.textContent = 'Planner: ' + v.plan.message;
    else {
      plan.textContent = v.plan.found ? 'Planner: the cheapest policy that fits is ' + v.plan.policy + (v.plan.offload ? ' with offload' : v.plan.host_layers ? ' (lower-case layers offloaded)' : '') + ', peak ' +
        fmt(v.plan.peak_bytes) + ', +' + pct(v.plan.recompute_overhead_pct) + ' FLOPs (' + v.plan.evaluated + ' policies simulated).'
        : 'Planner: no recompute policy fits this GPU (' + v.plan.evaluated + ' simulated).';
      if (v.plan.found) tip(plan, policyTip(v, v.plan.policy));
    }
  }

  // Cell colours: light enough for dark text in both themes (contrast above 4.5:1).
  function cellFill(ratio) {
    if (ratio < 0) return 'hsl(210, 10%, 82%)';
    if (ratio <= 1) return 'hsl(' + Math.round(130 - 80 * ratio) + ', 55%, 78%)';
    return 'hsl(0, 70%, ' + Math.round(Math.max(72, 84 - 6 * Math.min(ratio - 1, 2))) + '%)';
  }

  function drawGrid(v) {
    const g = v.grid, svg = $('heatmap');
    clear(svg);
    const bs = g.micro_batches, ss = g.seqs;
    const W = width(svg), left = 44, top = 4, bottom = 30, ch = 26, H = top + bottom + ch * bs.length, cw = (W - left - 4) / ss.length;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.style.height = H + 'px';
    const cap = g.capacity_bytes;
    const budget = cap || Math.max(1, ...g.peak_bytes.flat());
    const fitsAt = (i, j) => !!(g.fits && g.fits[i][j]);
    g.peak_bytes.forEach((row, i) => {
      svg.appendChild(svgEl('text', { x: left - 6, y: top + i * ch + ch / 2 + 4, 'text-anchor': 'end' }, 'b=' + bs[i]));
      row.forEach((val, j) => {
        const x = left + j * cw, y = top + i * ch;
        svg.appendChild(tip(svgEl('rect', { x: x + 1, y: y + 1, width: cw - 2, height: ch - 2, fill: cellFill(val < 0 ? -1 : val / budget), class: 'cell' }),
          'micro-batch ' + bs[i] + ', sequence ' + commas(ss[j]) + ': ' + (val < 0 ? 'not valid with this layout' : fmt(val, 2) + ' (' + exact(val) + ')' + (g.fits ? (g.fits[i][j] ? ', fits' : ', does not fit') : ''))));
        svg.appendChild(svgEl('text', { x: x + cw / 2, y: y + ch / 2 + 4, 'text-anchor': 'middle', class: 'cell-text' }, val < 0 ? '—' : (val / GiB).toFixed(val / GiB < 100 ? 1 : 0)));
        // The capacity contour: a line between a cell that fits and a neighbour that does not.
        if (cap !== undefined && j + 1 < row.length && fitsAt(i, j) !== fitsAt(i, j + 1)) svg.appendChild(svgEl('line', { x1: x + cw, x2: x + cw, y1: y, y2: y + ch, class: 'contour' }));
        if (cap !== undefined && i + 1 < bs.length && fitsAt(i, j) !== fitsAt(i + 1, j)) svg.appendChild(svgEl('line', { x1: x, x2: x + cw, y1: y + ch, y2: y + ch, class: 'contour' }));
      });
    });
    const [ci, cj] = g.current;
    svg.appendChild(svgEl('rect', { x: left + cj * cw + 1, y: top + ci * ch + 1, width: cw - 2, height: ch - 2, class: 'current-cell' }));
    ss.forEach((s, j) => svg.appendChild(svgEl('text', { x: left + j * cw + cw / 2, y: H - 14, 'text-anchor': 'middle' }, s >= 1024 ? s / 1024 + 'K' : s)));
    svg.appendChild(svgEl('text', { x: left, y: H - 2 }, 'sequence length (tokens); cells: peak GiB per GPU'));
    const legend = $('heatmap-legend');
    clear(legend);
    legend.appendChild(el('li', cap !== undefined ? 'fits (green → yellow near the capacity)' : 'peak (green → yellow: lower → higher)', 'sw-fits'));
    if (cap !== undefined) legend.appendChild(el('li', 'does not fit', 'sw-nofit'));
    if (cap !== undefined) legend.appendChild(el('li', 'capacity contour', 'sw-contour'));
    legend.appendChild(el('li', 'current setting', 'sw-current'));
    legend.appendChild(el('li', 'not valid (—)', 'sw-invalid'));
    const fit = $('fit');
    if (!v.fit) { fit.textContent = 'Choose a GPU to see the largest micro-batch and sequence that fit.'; fit.dataset.maxMicroBatch = ''; }
    else if (!v.fit.ok) { fit.textContent = v.fit.message; fit.dataset.maxMicroBatch = ''; }
    else {
      fit.textContent = 'Largest micro-batch that fits: ' + v.fit.max_micro_batch + (v.fit.max_micro_batch === 0 ? ' (not even one)' : '') +
        '; largest sequence at micro-batch ' + v.layout.micro_batch + ': ' + (v.fit.max_seq ? commas(v.fit.max_seq) : 'none') + '.';
      fit.dataset.maxMicroBatch = String(v.fit.max_micro_batch);
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

  // ---- one tooltip for every [data-tip] -----------------------------------------------------
  function showTip(ev, text) {
    const t = $('tooltip');
    t.textContent = text;
    t.hidden = false;
    t.style.left = Math.min(ev.clientX + 12, window.innerWidth - 330) + 'px';
    t.style.top = ev.clientY + 14 + 'px';
  }
  function hideTip() { $('tooltip').hidden = true; }
  document.addEventListener('mouseover', (ev) => {
    const n = ev.target.closest && ev.target.closest('[data-tip]');
    if (n) showTip(ev, n.dataset.tip); else if (!(ev.target.classList && ev.target.classList.contains('hit'))) hideTip();
  });
  document.addEventListener('focusin', (ev) => {
    const n = ev.target.closest && ev.target.closest('[data-tip]');
    if (n) { const r = n.getBoundingClientRect(); showTip({ clientX: r.left, clientY: r.bottom }, n.dataset.tip); }
  });

  function postHeight() {
    if (window.parent !== window) window.parent.postMessage({ type: 'actmem:height', height: document.documentElement.scrollHeight }, '*');
  }

  // ---- exports (answered by the worker too) ---------------------------------------------------
  function download(name, text, type) {
    const a = el('a');
    a.href = URL.createObjectURL(new Blob([text], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }
  function exportTimeline(then) {
    if (!shown) return;
    // The full timeline of the answer on screen (not of inputs the engine refused).
    const req = { ...shown.req, command: 'timeline' };
    delete req.stages;
    exportsPending.set(send('export', req), then);
  }

  // ---- start -----------------------------------------------------------------------------------
  function fillSelect(id, values, current) {
    const s = $(id);
    clear(s);
    for (const v of values) s.appendChild(el('option', v)).value = v;
    if (current !== undefined) s.value = current;
  }

  function filterPresets() {
    const q = $('preset-search').value.trim().toLowerCase();
    for (const g of $('preset').querySelectorAll('optgroup')) {
      let shown = 0;
      for (const o of g.children) {
        o.hidden = q !== '' && !(g.label + ' ' + o.textContent).toLowerCase().includes(q);
        if (!o.hidden) ++shown;
      }
      g.hidden = shown === 0;
    }
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
    examples = list.examples;
    for (const x of examples) { const o = el('option', x.id + ' — ' + x.title); o.value = x.id; $('example').appendChild(o); }
    const opt = list.options;
    fillSelect('dtype', opt.dtypes, 'bf16');
    fillSelect('attention', opt.attention, 'flash');
    fillSelect('optimizer', opt.optimizers, 'adamw');
    fillSelect('profile', opt.profiles, 'megatron');
    fillSelect('schedule', opt.schedules, '1f1b');
    const dl = $('recompute-list');
    for (const r of opt.recompute) if (!/[A-Z]/.test(r) && r !== 'custom') dl.appendChild(el('option')).value = r;
    $('preset').value = DEFAULT_PRESET;
    readHash();
    wire();
    bootDone = true;
    update();
  }

  function applyExample(id) {
    currentExample = id || null;
    customModelText = null;
    if (id) {
      const ex = examples.find((x) => x.id === id);
      // The form shows the example's settings; the request sends the example itself, so keys the
      // form has no field for (hidden_dropout) reach the engine verbatim.
      for (const k of ['micro_batch', 'seq', 'micro_batches', 'dropout', 'layer_split', 'gpu_memory']) $(k).value = '';
      for (const k of ['tp', 'pp', 'vpp', 'cp', 'dp', 'ep']) $(k).value = '1';
      setSelect($('zero'), '0');
      $('sp').checked = $('offload').checked = false;
      $('recompute').value = 'none';
      for (const [k, val] of Object.entries(ex.body.config || {})) {
        if (k === 'sp' || k === 'offload') $(k).checked = !!val;
        else if (k === 'dropout' || k === 'attention_dropout' || k === 'hidden_dropout') continue;  // sent by the example itself
        else if ($(k)) { if ($(k).tagName === 'SELECT') setSelect($(k), String(val)); else $(k).value = String(val); }
      }
      $('dropout').placeholder = "the example's";
    } else {
      $('dropout').placeholder = "model's";
    }
    customName = '';
    showModelChoice();
    update();
  }

  let mainEngineLoading = false;
  // The embedding API (docs/embedding.md): a synchronous evaluate on the page itself, loaded once
  // the first answer is drawn so it never delays it.
  function loadMainEngine() {
    mainEngineLoading = true;
    createActmem().then((M) => {
      window.actmem = Object.freeze({ evaluate: (request) => M.evaluate(String(request)) });
      ready();
    }).catch(() => ready());
  }

  // ---- find a layout: the engine's advise command over the form's model, sequence and GPU -----
  // The keys advise chooses itself are left out of its request (it refuses them).
  const adviseChooses = ['tp', 'sp', 'pp', 'vpp', 'cp', 'dp', 'ep', 'zero', 'micro_batch', 'micro_batches', 'schedule', 'recompute', 'layer_split', 'offload'];
  let adviseId = 0;
  function runAdvise() {
    if (!bootDone) return;
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
    adviseId = send('advise', req);
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
    if (m.id !== adviseId) return;
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
      tr.appendChild(td);
      tb.appendChild(tr);
    });
  }

  // ---- check against a real run: a snapshot file compared by the engine ----------------------
  let snapshotBytes = null, statsObject = null, compareId = 0;
  function runCompare() {
    const slot = document.querySelector('[data-err="snapshot"]');
    slot.textContent = '';
    if (!snapshotBytes || !bootDone) return;
    const req = Object.assign({}, readForm(), { command: 'compare' });
    if (statsObject) req.stats = statsObject;
    const copy = snapshotBytes.slice();  // the worker takes the copy; a new input can compare again
    compareId = ++seq;
    worker.postMessage({ id: compareId, lane: 'compare', request: JSON.stringify(req), bytes: copy }, [copy.buffer]);
    $('compare-panel').dataset.state = 'running';
  }
  function onCompare(m) {
    if (m.id !== compareId) return;
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
    file.arrayBuffer().then((buf) => { snapshotBytes = new Uint8Array(buf); runCompare(); });
  }
  function wireAdvise() {
    $('advise-run').addEventListener('click', runAdvise);
    for (const id of ['advise-gpus', 'advise-batch'])
      $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); runAdvise(); } });
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
      if (!f) { statsObject = null; runCompare(); return; }
      f.text().then((t) => {
        try { statsObject = JSON.parse(t); } catch (err) { statsObject = null; document.querySelector('[data-err="snapshot"]').textContent = 'stats: not JSON (' + err.message + ')'; return; }
        runCompare();
      });
    });
  }

  function wire() {
    wireCompare();
    wireAdvise();
    const form = $('inputs');
    // One listener: every control fires "input" (selects and checkboxes too); typing waits a
    // moment, a choice is sent at once; identical requests are not sent twice.
    form.addEventListener('input', (e) => {
      const id = e.target.id;
      if (id === 'model-json' || id === 'example' || id === 'model-file' || id === 'preset-search') return;
      if (id === 'preset') { customModelText = null; currentExample = null; $('example').value = ''; showModelChoice(); }
      const typing = e.target.tagName === 'INPUT' && e.target.type !== 'checkbox';
      schedule(typing ? 25 : 0);
    });
    $('example').addEventListener('change', () => applyExample($('example').value));
    // The preset filter narrows the list as one types (family, id or name, any case); Enter
    // chooses the first preset still shown. Filtering sends nothing: only a choice does.
    $('preset-search').addEventListener('input', filterPresets);
    $('preset-search').addEventListener('keydown', (e) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      const first = [...$('preset').querySelectorAll('option')].find((o) => !o.hidden);
      if (!first || first.value === $('preset').value) return;
      $('preset').value = first.value;
      $('preset').dispatchEvent(new Event('input', { bubbles: true }));
    });
    $('all-stages').addEventListener('change', () => schedule(0));
    // Choosing a layer kind redraws the table from the answer on screen: no engine request.
    $('inventory-kind').addEventListener('change', () => { if (inventoryEst) drawInventoryRows(); });
    $('use-model').addEventListener('click', () => {
      clearErrors();
      customModelText = $('model-json').value;
      currentExample = null;
      $('example').value = '';
      customName = '';
      showModelChoice();
      update();
    });
    $('clear-model').addEventListener('click', () => { customModelText = null; currentExample = null; $('model-json').value = ''; $('preset').value = DEFAULT_PRESET; showModelChoice(); update(); });
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
    $('export-json').addEventListener('click', () => exportTimeline((tl) => {
      download('actmem.json', JSON.stringify({ view: shown.view, timeline: tl }, null, 2), 'application/json');
    }));
    $('export-csv').addEventListener('click', () => exportTimeline((tl) => {
      if (!tl.ok) return;
      const lines = ['stage,event,label,live_bytes,activations,recompute,transients'];
      for (const s of tl.stages) s.events.forEach((e, i) => lines.push([s.stage, i, e.label, e.live_bytes, e.activations, e.recompute, e.transients].join(',')));
      const inv = ['', 'tensor,shape,dtype,bytes,backward'];
      for (const t of shown.view.estimate.per_layer.tensors) inv.push([t.name, t.shape, t.dtype, t.bytes, '"' + t.backward + '"'].join(','));
      download('actmem.csv', lines.concat(inv).join('\n') + '\n', 'text/csv');
    }));
    $('theme-toggle').addEventListener('click', () => {
      const dark = document.documentElement.dataset.theme === 'dark' ||
        (!document.documentElement.dataset.theme && matchMedia('(prefers-color-scheme: dark)').matches);
      document.documentElement.dataset.theme = dark ? 'light' : 'dark';
      const p = new URLSearchParams(location.hash.slice(1));
      p.set('theme', document.documentElement.dataset.theme);
      history.replaceState(null, '', '#' + p.toString());
    });
    window.addEventListener('hashchange', () => { readHash(); update(); });
    let lastW = 0;
    window.addEventListener('resize', () => {
      if (!shown || Math.abs(window.innerWidth - lastW) < 8) return;
      lastW = window.innerWidth;
      draw(shown.view, shown.key, shown.req);
    });
    if (window.ResizeObserver) new ResizeObserver(postHeight).observe(document.documentElement);
  }

  try {
    worker = startWorker();
    worker.onmessage = onMessage;
    worker.onerror = (e) => { setStatus('error', 'The engine failed to load: ' + (e.message || 'worker error')); };
    worker.postMessage({ id: 0, lane: 'boot', request: JSON.stringify({ command: 'presets' }) });
  } catch (e) {
    setStatus('error', 'The engine failed to start: ' + e);
  }
})();
