// The form: read into the engine's view request, written to and read from the URL hash, the model
// choice, errors beside their fields, changes applied from a suggestion, a layout or a worked
// example, and the form's own controls wired.

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
  readOptions(config);
  // The field is in GiB: a plain number gets the unit; the engine parses the size exactly.
  const mem = $('gpu_memory').value.trim();
  if (mem !== '') config.gpu_memory = /^[\d.]+$/.test(mem) ? mem + 'GiB' : mem;
  const req = { command: 'view', config };
  // A pasted launch config is read by the engine as the config; a field given beside it must
  // agree with it (the engine names a conflict).
  if (state.launch) req[state.launch.key] = state.launch.text;
  if (state.currentExample) req.example = state.currentExample;
  else if (state.customModelText !== null) req.model_text = state.customModelText;
  else req.preset = $('preset').value;
  if ($('all-stages').checked) req.stages = 'all';
  return req;
}

// ---- URL hash state ---------------------------------------------------------------------
function writeHash() {
  const p = new URLSearchParams();
  for (const k of hashKeys) {
    if (k === 'preset' && (state.customModelText !== null || state.currentExample)) continue;
    const v = $(k).value;
    if (v !== '') p.set(k, v);
  }
  if ($('sp').checked) p.set('sp', '1');
  if ($('offload').checked) p.set('offload', '1');
  if ($('all-stages').checked) p.set('all_stages', '1');
  writeOptionsHash(p);
  if (state.customModelText !== null) p.set('model', state.customModelText);
  if (state.currentExample) p.set('example', state.currentExample);
  const cur = new URLSearchParams(location.hash.slice(1));
  for (const k of ['theme', 'embed']) if (cur.has(k)) p.set(k, cur.get(k));
  history.replaceState(null, '', '#' + p.toString());
  $('open-full').href = '#' + fullHash(p);
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
  readOptionsHash(p);
  state.customModelText = null;
  if (p.has('model')) {
    $('model-json').value = p.get('model');
    state.customModelText = p.get('model');
  }
  state.currentExample = p.get('example') || null;
  $('example').value = state.currentExample && [...$('example').options].some((o) => o.value === state.currentExample) ? state.currentExample : '';
  const theme = p.get('theme');
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  document.body.classList.toggle('embed', p.get('embed') === '1');
  showModelChoice();
}

// The model box names what the answer is for: a preset, or the pasted config with its size.
function showModelChoice() {
  const sel = $('preset');
  let opt = sel.querySelector('option[value="__custom__"]');
  if (state.customModelText !== null || state.currentExample) {
    if (!opt) { opt = el('option'); opt.value = '__custom__'; sel.insertBefore(opt, sel.firstChild); }
    opt.textContent = state.currentExample ? 'worked example: ' + state.currentExample + (state.customName ? ' (' + state.customName + ')' : '')
      : 'pasted config.json' + (state.customName ? ': ' + state.customName : '');
    sel.value = '__custom__';
  } else if (opt) {
    opt.remove();
  }
}

// ---- errors beside their fields (overlaid: an error moves nothing on the page) -----------
// Only what shows an error is written (a write to each of the dozens of slots restyled them all).
function clearErrors() {
  for (const e of document.querySelectorAll('[data-err]')) {
    if (e.textContent) e.textContent = '';
    if (e.style.top) e.style.top = '';
  }
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

// A suggestion's or a layout's change (engine config keys) written into the form, then asked for.
function applyChange(change) {
  for (const [k, val] of Object.entries(change)) {
    if ($(optionId(k))) $(optionId(k)).value = Array.isArray(val) ? val.join(',') : String(val);
    else if (k === 'offload' || k === 'sp') $(k).checked = !!val;
    else if (k === 'zero' || k === 'schedule') setSelect($(k), String(val));
    else if (k === 'layer_split') $(k).value = Array.isArray(val) ? val.join(',') : String(val);
    else $(k).value = String(val);
  }
  update();
}

// The preset filter: narrows the list to the presets whose family, id or name holds the text.
function filterPresets() {
  const q = $('preset-search').value.trim().toLowerCase();
  for (const g of $('preset').querySelectorAll('optgroup')) {
    let visible = 0;
    for (const o of g.children) {
      o.hidden = q !== '' && !(g.label + ' ' + o.textContent).toLowerCase().includes(q);
      if (!o.hidden) ++visible;
    }
    g.hidden = visible === 0;
  }
}

// A worked example chosen: its settings shown in the form, the example itself sent.
function applyExample(id) {
  state.currentExample = id || null;
  state.customModelText = null;
  if (id) {
    const ex = state.examples.find((x) => x.id === id);
    // The form shows the example's settings; the request sends the example itself, so keys the
    // form has no field for (hidden_dropout) reach the engine verbatim.
    for (const k of ['micro_batch', 'seq', 'micro_batches', 'dropout', 'layer_split', 'gpu_memory']) $(k).value = '';
    for (const k of ['tp', 'pp', 'vpp', 'cp', 'dp', 'ep']) $(k).value = '1';
    setSelect($('zero'), '0');
    for (const r of optionRows()) $(optionId(r.key)).value = '';
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
  state.customName = '';
  showModelChoice();
  update();
}

function wireForm() {
  const form = $('inputs');
  // One listener: every control fires "input" (selects and checkboxes too); an input is sent at
  // once, typing during a computation after its answer (request.js schedule); identical
  // requests are not sent twice.
  form.addEventListener('input', (e) => {
    const id = e.target.id;
    if (id === 'model-json' || id === 'example' || id === 'model-file' || id === 'preset-search' || id === 'launch-text' || id === 'launch-kind') return;
    if (id === 'preset') { state.customModelText = null; state.currentExample = null; $('example').value = ''; showModelChoice(); }
    if (id === optionId('framework') && e.target.value !== '' && e.target.value !== 'plain') clearForFramework(null);
    applyApplicability();
    const typing = e.target.tagName === 'INPUT' && e.target.type !== 'checkbox';
    schedule(typing);
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
  $('all-stages').addEventListener('change', () => schedule(false));
  $('use-model').addEventListener('click', () => {
    clearErrors();
    state.customModelText = $('model-json').value;
    state.currentExample = null;
    $('example').value = '';
    state.customName = '';
    showModelChoice();
    update();
  });
  $('clear-model').addEventListener('click', () => { state.customModelText = null; state.currentExample = null; $('model-json').value = ''; $('preset').value = DEFAULT_PRESET; showModelChoice(); update(); });
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
  window.addEventListener('hashchange', () => { readHash(); update(); });
}
