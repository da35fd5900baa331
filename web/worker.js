// actmem engine worker: runs the WebAssembly engine off the page's main thread. The page posts
// {id, lane, request}; in the "quick" and "view" lanes only the latest request is answered (older
// ones that queued up while the engine was busy are dropped), "quick" (the view without its
// searches, the verdict first) before "view"; other lanes (exports) answer every request, and
// "warm" (the shown request asked again, to compile the engine's code for the next input) runs
// when nothing else waits: an input's view drops the warm jobs not begun ({id, lane, dropped}).
// Replies {id, lane, text, ms} carry the engine's answer text unchanged. The "compare" lane also
// carries the snapshot file's bytes ({bytes: Uint8Array}). In the single-file page the first
// message is {lane: 'wasm', base64}: the engine's wasm, gzip-compressed (start.js, wasm-gz.js).
'use strict';

// Served site: load the module by path. Single-file page: the module's text precedes this one in
// the worker's Blob (start.js), so createActmem is already defined.
if (typeof createActmem === 'undefined') importScripts('actmem.js');

let engine = null;
const latest = new Map();  // lane -> the newest job not answered yet ("quick" and "view")
const queue = [];          // jobs of other lanes but "warm", in order
const warming = [];        // "warm" jobs: run only when nothing else waits
let scheduled = false;

function schedule() {
  if (scheduled || !engine) return;
  scheduled = true;
  // Let every message already queued arrive first, so a burst of inputs costs one evaluation.
  setTimeout(drain, 0);
}

function run(job) {
  const t0 = performance.now();
  let text;
  try {
    text = job.lane === 'compare' ? engine.compare(job.request, job.bytes) : engine.evaluate(job.request);
  } catch (e) {
    text = JSON.stringify({ ok: false, error: { code: 'engine', field: 'request', message: 'request: the engine failed: ' + e } });
  }
  postMessage({ id: job.id, lane: job.lane, text, ms: performance.now() - t0 });
}

function drain() {
  scheduled = false;
  const job = queue.length ? queue.shift() : latest.get('quick') || latest.get('view') || warming.shift();
  if (!job) return;
  if (job.lane === 'view' || job.lane === 'quick') latest.delete(job.lane);
  run(job);
  if (queue.length || latest.size || warming.length) schedule();
}

onmessage = (e) => {
  const job = e.data;
  if (job.lane === 'wasm') { load(actmemWasmFromGz(job.base64, failed)); return; }
  if (job.lane === 'view' || job.lane === 'quick') {
    latest.set(job.lane, job);
    // An input came: warm runs not begun are of no use (its view compiles the same code).
    for (const w of warming.splice(0)) postMessage({ id: w.id, lane: 'warm', dropped: true });
  } else if (job.lane === 'warm') {
    warming.push(job);
  } else {
    queue.push(job);
  }
  schedule();
};

const failed = (e) => postMessage({ lane: 'failed', text: String(e) });
function load(options) {
  createActmem(Object.assign({ noExitRuntime: true }, options)).then((M) => {
    engine = M;
    schedule();
  }).catch(failed);
}
// Single-file page: the engine's wasm comes as start.js's first message (gzip-compressed, base64),
// compiled by wasm-gz.js (which follows the engine's text in this worker's Blob).
if (typeof actmemWasmFromGz === 'undefined') load({});
