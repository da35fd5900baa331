// The engine's answers to the inputs: the status line, view requests to the worker (debounced, one
// per distinct input), its messages routed by lane, "ready", and a link's refused value dropped.

// ---- honest state: the results say when they are not the answer to the inputs -------------
const CURRENT_STATUS = 'This is the answer for the inputs as shown. Hover a number for its exact bytes and what it means.';
function setStatus(kind, text) {
  const s = $('status');
  setData(s, 'kind', kind);
  setText(s, text);
  // "partial": the inputs' verdict is shown, their searches still run (not stale, not final).
  // "updating" marks the results stale only if the answer takes over STALE_AFTER_MS: most come
  // sooner, and marking them at once then unmarking restyled and repainted every panel twice a
  // change (11-15 ms of paint on 405B while the engine ran, 2026-12-05, a Chromium trace).
  clearTimeout(state.staleTimer);
  const results = $('results');
  if (kind === 'updating') state.staleTimer = setTimeout(() => setData(results, 'stale', '1'), STALE_AFTER_MS);
  else setData(results, 'stale', kind === 'current' || kind === 'partial' ? '0' : '1');
}
const STALE_AFTER_MS = 120;

// ---- the engine in a worker ---------------------------------------------------------------
function send(lane, request) {
  const id = ++state.seq;
  state.worker.postMessage({ id, lane, request: JSON.stringify(request) });
  return id;
}

// An input is sent at once (once the event's handlers are done, so its changes go together: a
// microtask, not a timer, which waited 5-18 ms for the frame the input caused, 2026-12-05) unless
// it is typing while a view is being computed: then the answer in flight brings it (onMessage
// sends the latest input instead of drawing a superseded answer), so a burst of keystrokes costs
// one request per answer and no input waits on a timer.
function schedule(typing) {
  state.debouncing = true;
  document.body.dataset.ready = '0';  // not the answer to these inputs until it arrives
  if (!state.inputAt) state.inputAt = performance.now();
  if (typing && state.awaiting) return;
  queueMicrotask(() => { if (state.debouncing) update(); });
}

// The engine did not load (its worker or its wasm): said once and kept, whatever comes after
// (start.js may report it before the form is even filled).
function engineFailed(why) {
  state.engineFailed = String(why);
  setStatus('error', 'The engine failed to load: ' + state.engineFailed);
  $('verdict').textContent = 'The engine failed to load.';
}

// Sends the view request for the current inputs (once per distinct input).
function update() {
  if (!state.bootDone) return;
  if (state.engineFailed) { engineFailed(state.engineFailed); return; }
  state.debouncing = false;
  const req = readForm();
  const key = JSON.stringify(req);
  if (key === state.wantedKey) {
    writeHash();
    // Nothing new to ask: the answer (or the error) on screen is already this input's.
    if ((state.shown && state.shown.key === key) || state.lastError) finish();
    return;
  }
  state.lastError = null;
  state.wantedKey = key;
  state.wantedReq = req;
  state.fallbackTries = 0;
  if (drawFirstView(key, req)) {
    writeHash();
    return;
  }
  // With a GPU the view's searches (plan, fit, suggestions) are most of its time: where a view
  // takes long (the first, on a cold engine, or the last took over 100 ms: 4,096 micro-batches
  // of 405B take a second) the view without them is asked first and shown with those parts
  // pending, then the full one. Below that a quick view would only add its own drawing to the
  // others (2026-12-03: every panel's p95 rose by about 20 ms for 70B and 405B at 64 micro-batches).
  const gpu = req.config && (req.config.gpu || req.config.gpu_memory);
  const slow = !(state.lastViewMs < 100);
  state.wantedQuick = gpu && slow ? send('quick', Object.assign({}, req, { searches: false })) : 0;
  delete document.body.dataset.quickMs;
  delete document.body.dataset.verdictMs;
  state.wanted = send('view', req);
  state.awaiting = true;
  // The rest while the engine works: the link, the last input's error messages, the status line
  // (these took 6-15 ms of the main thread before the request left, 2026-12-05).
  writeHash();
  clearErrors();
  document.body.dataset.ready = '0';
  window.actmemRequests++;
  setStatus('updating', 'Updating…');
}

function onMessage(e) {
  const m = e.data;
  if (m.lane === 'failed') { engineFailed(m.text); return; }
  if (m.lane === 'boot') { boot(JSON.parse(m.text)); return; }
  if (m.lane === 'export') { const done = state.exportsPending.get(m.id); state.exportsPending.delete(m.id); if (done) done(JSON.parse(m.text)); return; }
  if (m.lane === 'fallback') { onFallback(m); return; }
  if (m.lane === 'compare') { onCompare(m); return; }
  if (m.lane === 'advise') { onAdvise(m); return; }
  if (m.lane === 'rl') { onRl(m); return; }
  if (m.lane === 'quick') { onQuick(m); return; }
  if (m.lane === 'warm') { onWarm(m); return; }
  if (m.id !== state.wanted) return;  // superseded by a newer input
  state.awaiting = false;
  if (state.debouncing) {
    // Typed while this view was computed: ask for the latest input, unless it came back to this.
    if (JSON.stringify(readForm()) !== state.wantedKey) { update(); return; }
    state.debouncing = false;
  }
  const t0 = performance.now();
  const ans = JSON.parse(m.text);
  document.body.dataset.parseMs = (performance.now() - t0).toFixed(2);
  document.body.dataset.engineMs = m.ms.toFixed(2);
  state.lastViewMs = m.ms;
  if (!ans.ok) { answerError(ans.error, state.wantedReq); return; }
  state.lastError = null;
  document.body.dataset.state = 'ok';
  draw(ans, state.wantedKey, state.wantedReq);
  if (state.snapshotBytes) runCompare();  // the comparison follows the configuration shown
  setStatus('current', CURRENT_STATUS);
  if (!document.body.dataset.firstVerdictMs) document.body.dataset.firstVerdictMs = performance.now().toFixed(1);
  warm(m.ms);
  finish();
}

// Once, after the first answer that took at most WARM_LIMIT_MS: the worker is asked the shown
// request twice more ("warm" lane) while the reader reads. Its first answers ran on code compiled
// as it was first called (V8 compiles wasm lazily, into code 2-4x slower until the hot functions
// are compiled again in the background), so the next input's view took 2-3x its later time
// (2026-12-05, the page test "speed": the first change after a 70B link 171 ms, the others 49-91
// ms; with two warm runs 65-89 ms). Not after a slower view (4,096 micro-batches of 405B take a
// second): the reader's next input would wait behind it. The last warm answer's time, on compiled
// code, decides whether the next input asks the quick view first.
const WARM_LIMIT_MS = 400;
// The worker drops warm runs not begun when an input's view arrives (worker.js), and says so.
// The runs are spaced: V8 compiles the functions a run found hot in the background, and a run at
// once shared the two cores with that compile (in a worker, one 405B view after one run and 1.5 s
// idle took 23-38 ms, the second to sixth of six runs back to back 70-151 ms; 2026-12-05).
const WARM_RUNS = 2, WARM_GAP_MS = 300;
function warm(ms) {
  if (state.warmId || ms > WARM_LIMIT_MS) return;
  state.warmKey = state.wantedKey;
  state.warmPending = WARM_RUNS;
  state.warmId = send('warm', state.wantedReq);
}
// Whether the warm runs' request is still the one shown, no other view awaited.
const warmCurrent = () => state.warmKey === state.wantedKey && !state.awaiting;
function onWarm(m) {
  state.warmPending--;
  if (!m.dropped && m.id === state.warmId && warmCurrent()) state.lastViewMs = m.ms;
  if (m.dropped || !warmCurrent()) state.warmPending = 0;
  if (state.warmPending > 0) {
    setTimeout(() => {
      if (warmCurrent() && !state.debouncing) { state.warmId = send('warm', state.wantedReq); return; }
      state.warmPending = 0;
      pageEngine();
    }, WARM_GAP_MS);
    return;
  }
  pageEngine();
}

// The first answer of a page opened without a link: the build asked this same engine the page's
// first request (web/first-request.json) and put its answer in the page (build-pages.mjs, the
// "first-view" block). When the inputs are exactly that request it is drawn at once, verdict first,
// instead of after the worker's engine compiles (docs/performance.md, the cold first verdict); the
// worker is asked the same request in the "warm" lane (warm, above) to compile its code.
function drawFirstView(key, req) {
  const block = $('first-view');
  if (!block) return false;
  block.remove();  // once: later inputs go to the engine
  const first = JSON.parse(block.textContent);
  if (state.shown || JSON.stringify(first.request) !== key) return false;
  const id = (state.wanted = ++state.seq);
  document.body.dataset.firstView = 'build';
  document.body.dataset.state = 'ok';
  drawVerdictFirst(first.answer, key, req, () => {
    // Still these inputs' answer (no request sent since, the engine not failed meanwhile).
    if (state.wanted !== id || state.awaiting || state.debouncing || state.engineFailed) return;
    setStatus('current', CURRENT_STATUS);
    finish();
  });
  if (!document.body.dataset.firstVerdictMs) document.body.dataset.firstVerdictMs = performance.now().toFixed(1);
  warm(0);
  return true;
}

// The view without its searches: drawn while the full view is still awaited (never after it, and
// never an error: the full view brings the same one), its pending parts saying so.
function onQuick(m) {
  if (m.id !== state.wantedQuick || !state.awaiting || state.debouncing) return;
  const ans = JSON.parse(m.text);
  if (!ans.ok) return;
  document.body.dataset.quickMs = m.ms.toFixed(2);
  // The other panels follow in the next task; the line above the verdict says what is pending
  // once they are drawn.
  drawVerdictFirst(ans, state.wantedKey, state.wantedReq, () => {
    setStatus('partial', 'The verdict for the inputs as shown; still searching for the largest sizes that fit, the planner\'s policy and the changes that fit…');
  });
  if (state.inputAt) document.body.dataset.verdictMs = (performance.now() - state.inputAt).toFixed(2);
  if (!document.body.dataset.firstVerdictMs) document.body.dataset.firstVerdictMs = performance.now().toFixed(1);
}

function finish() {
  if (state.debouncing || state.awaiting) return;
  if (state.inputAt) {
    state.timings.push(performance.now() - state.inputAt);
    document.body.dataset.renderMs = (performance.now() - state.inputAt).toFixed(2);
    // Without a quick view first, the verdict came with every other panel.
    if (!document.body.dataset.verdictMs) document.body.dataset.verdictMs = document.body.dataset.renderMs;
    state.inputAt = 0;
  }
  pageEngine();
  postHeight();
}

// The page's own engine (window.actmem, embed.js), loaded once the worker's warm runs are done
// (its compile would share the two cores with them and the first inputs), then "ready".
function pageEngine() {
  if (state.debouncing || state.awaiting) return;
  if (window.actmem) ready();
  else if (!state.mainEngineLoading && !state.warmPending) loadMainEngine();
}
// "ready": the page shows the answer (or the error) for its current inputs, none pending; an
// input or a request sets it back to "0".
function ready() { if (!state.debouncing && !state.awaiting) document.body.dataset.ready = '1'; }

// An error in the inputs: the message beside its field, the results marked as the previous
// inputs' answer. With nothing shown yet (a link or an embed with a bad value), the page shows
// the answer without the offending value, marked so.
function answerError(err, req) {
  state.lastError = err;
  showError(err);
  document.body.dataset.state = 'error';
  if (state.shown) {
    setStatus('error', 'Not updated: ' + sentence(err.message) + ' The results below are for the previous inputs.');
    finish();
    return;
  }
  setStatus('error', 'This link has a value the engine refuses: ' + sentence(err.message) + ' Shown below: the answer without it.');
  fallback(req ? withoutField(req, err.field) : { command: 'view', preset: DEFAULT_PRESET, config: {} });
}
// Asks for the answer without the refused value, at most 8 times (one value dropped each time).
function fallback(next) {
  if (!next || ++state.fallbackTries > 8) { finish(); return; }
  state.fallbackReq = next;
  state.fallbackId = send('fallback', next);
}
function onFallback(m) {
  if (m.id !== state.fallbackId) return;
  const ans = JSON.parse(m.text);
  if (!ans.ok) { fallback(withoutField(state.fallbackReq, ans.error.field)); return; }
  draw(ans, null, state.fallbackReq);
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
