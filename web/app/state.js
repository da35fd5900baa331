// The page's state: every value that changes while the page runs, in one sealed object (the other
// files read and write state.<field>; what else they declare at the top level is constant).

const DEFAULT_PRESET = 'llama-3.1-8b';
// The first view: a configuration that runs (8B on 8 H100s, ZeRO-1, selective recompute).
const FIRST_VIEW = { preset: DEFAULT_PRESET, gpu: 'h100-80gb', dp: '8', zero: '1' };

const state = Object.seal({
  worker: null,              // the engine's Web Worker (main.js starts it)
  bootDone: false,           // the engine listed its presets and the form is filled (boot, main.js)
  examples: [],              // the worked examples the engine lists: { id, title, body }
  // The model. A pasted or dropped config.json, as the text the user gave: the engine reads it
  // (model_text), so a key given twice, Python's Infinity or a syntax error is answered as on the
  // command line.
  customModelText: null,
  customName: '',            // its name and size from the engine's last answer
  currentExample: null,      // a worked example id: its preset and config are the request's base
  launch: null,              // a pasted launch config in use: { key: megatron_args | torchtitan_toml, text }
  // The view request and its answer (request.js).
  seq: 0,                    // request ids, every lane; only the answer to `wanted` is drawn as current
  wanted: 0,                 // the id of the current inputs' view request
  wantedQuick: 0,            // ... and of their view without searches, drawn first (request.js)
  staleTimer: 0,             // marks the results stale when an answer is slow (request.js setStatus)
  lastViewMs: undefined,     // the engine time of the last full view (whether to ask the quick one)
  warmId: 0,                 // the last "warm" request: the first answer's request asked again (request.js)
  warmKey: '',               // ... as JSON text
  warmPending: 0,            // warm runs asked and not answered (the page's engine loads after them)
  engineFailed: null,        // why the engine did not load, once it did not (request.js)
  wantedKey: '',             // that request as JSON text: an identical request is not sent twice
  wantedReq: null,           // that request
  shown: null,               // { key, req, view }: the answer on screen and the request it answers (key null for a link's fallback)
  lastError: null,           // the error of the current inputs, when they have one
  debouncing: false,         // an input waits for its request
  awaiting: false,           // the current request is with the engine
  inputAt: 0,                // when the first input not yet answered came (performance.now()), 0 if none
  timings: (window.actmemTimings = []),  // input-to-answer times in ms (tests read them)
  fallbackTries: 0,          // requests without a refused value asked for so far (at most 8)
  fallbackReq: null,         // the latest of them, sent in the "fallback" lane
  fallbackId: 0,             // its id
  // The other lanes and panels.
  exportsPending: new Map(), // export request id -> what to do with its answer (exports.js)
  inventoryEst: null,        // the estimate whose layer inventory is on screen; the kind selector redraws from it (tables.js)
  adviseId: 0,               // the Find a layout request whose answer is drawn (planner.js)
  rlId: 0,                   // the RL step request whose answer is drawn (rl.js)
  snapshotBytes: null,       // the chosen memory snapshot's bytes (compare.js)
  statsObject: null,         // the torch.cuda.memory_stats() JSON given with it, parsed, if any
  compareId: 0,              // the compare request whose answer is drawn
  mainEngineLoading: false,  // the engine on the page (window.actmem) is loading (embed.js)
  lastWidth: 0,              // the window's width at the last redraw on resize (view.js)
});
window.actmemRequests = 0;  // view requests sent to the engine (tests count them)
