// actmem page, its first script: starts the engine's Web Worker before the page's markup is parsed,
// so the engine compiles while the page is read, laid out and filled (docs/performance.md, the cold
// first verdict). app.js (main.js) takes the worker from window.actmemStart; answers that arrive
// before it does wait in `queued`. In the single file (build-pages.mjs) this script follows the
// inlined engine and worker.js and builds the worker from their texts (file:// pages cannot load a
// worker by path); the engine's wasm follows it, posted by sendWasm. The served page loads
// worker.js by path.
'use strict';
(function () {
  const start = { worker: null, queued: [], error: null };
  try {
    const workerSrc = document.getElementById('worker-src');
    if (workerSrc) {
      const parts = [document.getElementById('engine-src').textContent, '\n', workerSrc.textContent];
      start.worker = new Worker(URL.createObjectURL(new Blob(parts, { type: 'text/javascript' })));
    } else {
      start.worker = new Worker('worker.js');
    }
    start.worker.onmessage = (e) => start.queued.push(e);
    start.worker.onerror = (e) => { start.error = e.message || 'worker error'; };
  } catch (e) {
    start.error = String(e);
  }
  // Single file: called by the script that follows the wasm's text, which the parser reads while
  // the worker starts. A message, not a part of the worker's Blob: a Blob's text goes through the
  // browser's process (20-45 ms for these 600 KB here).
  start.sendWasm = () => {
    if (start.worker) start.worker.postMessage({ lane: 'wasm', base64: document.getElementById('wasm-gz').textContent.trim() });
  };
  window.actmemStart = start;
})();
