// Real-browser tests of the page: Debian's Chromium driven by playwright-core, the built dist/
// served on 127.0.0.1, numbers compared with the native CLI to the byte.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join, extname, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { buildApp } from '../../web/build-app.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'dist');
const shots = join(root, 'build', 'screenshots');
const cli = join(root, 'build', 'native', 'actmem');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
let server, base, browser;

before(async () => {
  server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (path === '/embed-host.html') {
      // A documentation page embedding the calculator, recording the heights it reports.
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><body><iframe id="f" src="/index.html#preset=gpt2&embed=1&theme=dark" width="600" height="200"></iframe>
        <script>window.heights=[];addEventListener('message',e=>{if(e.data&&e.data.type==='actmem:height'){heights.push(e.data.height);document.getElementById('f').height=e.data.height;}});</script></body>`);
      return;
    }
    try {
      const body = await readFile(join(dist, path === '/' ? 'index.html' : path));
      res.writeHead(200, { 'content-type': types[extname(path)] || 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  await mkdir(shots, { recursive: true });
});

after(async () => {
  await browser?.close();
  server?.close();
});

// Long tasks and layout shifts observed from the first script on (PerformanceObserver).
const observers = () => {
  window.longTasks = [];
  window.cls = 0;
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });
  new PerformanceObserver((l) => { for (const e of l.getEntries()) if (!e.hadRecentInput) window.cls += e.value; }).observe({ type: 'layout-shift', buffered: true });
};

async function open(hash, viewport = { width: 1280, height: 900 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.addInitScript(observers);
  await page.goto(`${base}/index.html#${hash}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  return { page, errors };
}

// Runs an input action and waits until the page has the engine's answer (or error) for it: the
// engine runs in a worker, so every answer arrives asynchronously.
async function settle(page, action) {
  await page.evaluate(() => { document.body.dataset.ready = '0'; });
  await action();
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
}

function native(args) {
  return JSON.parse(execFileSync(cli, ['estimate', ...args, '--json'], { encoding: 'utf8' }));
}

const digits = (s) => s.replace(/[^0-9]/g, '');

test('loads, reaches the ready marker, and shows the verdict without errors', async () => {
  const { page, errors } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&attention=flash&recompute=selective');
  const verdict = await page.textContent('#verdict');
  assert.match(verdict, /Fits|Does not fit|Peak/);
  // Model presets are grouped by architecture family (the presets answer's `family`).
  const groups = await page.$$eval('#preset optgroup', (gs) => gs.map((g) => [g.label, [...g.children].map((o) => o.value)]));
  const byFamily = Object.fromEntries(groups);
  assert.deepEqual(byFamily.qwen3, ['qwen3-8b']);
  assert.ok(byFamily.llama.includes('llama-3.1-8b'));
  assert.equal(await page.$eval('#preset', (s) => s.value), 'llama-3.1-8b');
  assert.deepEqual(errors, []);
  await page.close();
});

test('displayed numbers equal the native `actmem estimate --json` to the byte', async () => {
  const cases = [
    { hash: 'preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&zero=1&attention=flash&recompute=selective',
      args: ['--preset', 'llama-3.1-70b', '--gpu', 'h100-80gb', '--seq', '8192', '--tp', '8', '--sp', '--pp', '4', '--dp', '2', '--zero', '1', '--attention', 'flash', '--recompute', 'selective'] },
    { hash: 'preset=gpt2&gpu=rtx-4090&seq=1024&micro_batch=8&attention=eager&profile=hf&recompute=none',
      args: ['--preset', 'gpt2', '--gpu', 'rtx-4090', '--seq', '1024', '--micro-batch', '8', '--attention', 'eager', '--profile', 'hf', '--recompute', 'none'] },
    { hash: 'preset=mixtral-8x7b&gpu=h200-141gb&seq=4096&tp=2&sp=1&ep=4&dp=4&zero=3&attention=flash&recompute=full&profile=pytorch',
      args: ['--preset', 'mixtral-8x7b', '--gpu', 'h200-141gb', '--seq', '4096', '--tp', '2', '--sp', '--ep', '4', '--dp', '4', '--zero', '3', '--attention', 'flash', '--recompute', 'full', '--profile', 'pytorch'] },
  ];
  for (const c of cases) {
    const n = native(c.args);
    const { page } = await open(c.hash);
    assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes), c.hash);
    assert.equal(digits(await page.textContent('#per-layer-bytes')), String(n.per_layer.activation_bytes), c.hash);
    for (const t of n.per_layer.tensors) {
      const cell = await page.textContent(`td[data-tensor="${t.name}"]`);
      assert.equal(digits(cell), String(t.bytes), `${c.hash} ${t.name}`);
    }
    const headroom = await page.textContent('dd[data-key="headroom"]');
    assert.equal(headroom.replace(/[^0-9-]/g, ''), String(n.headroom_bytes));
    await page.close();
  }
});

test('a stack of layer kinds: the inventory shows each kind\'s records, equal to the native answer, with no engine request', async () => {
  const args = ['--preset', 'nemotron-3-nano-30b-a3b', '--gpu', 'h100-80gb', '--seq', '4096', '--profile', 'hf', '--attention', 'flash'];
  const n = native(args);
  const { page, errors } = await open('preset=nemotron-3-nano-30b-a3b&gpu=h100-80gb&seq=4096&profile=hf&attention=flash');
  const options = await page.$$eval('#inventory-kind option', (os) => os.map((o) => o.value));
  assert.deepEqual(options, ['', ...n.model.layer_kinds.map((k) => k.name)]);
  for (const k of n.model.layer_kinds) {
    const before = await page.evaluate(() => window.actmemRequests);
    await page.selectOption('#inventory-kind', k.name);
    assert.equal(digits(await page.textContent('#per-layer-bytes')), String(k.full_bytes), k.name);
    for (const t of k.tensors)
      assert.equal(digits(await page.textContent(`td[data-tensor="${t.name}"]`)), String(t.bytes), `${k.name} ${t.name}`);
    assert.equal(await page.evaluate(() => window.actmemRequests), before, 'no engine request');
  }
  // A single-kind model hides the selector.
  await settle(page, () => page.selectOption('#preset', 'llama-3.1-8b'));
  assert.equal(await page.isVisible('#inventory-kind-label'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('bad values show the engine\'s field-named message beside the field; the previous result stays', async () => {
  const { page } = await open('preset=gpt2&gpu=h100-80gb&seq=1024');
  const before = await page.textContent('#verdict');
  const cases = [
    ['#tp', '5', 'config.tp', /does not divide num_attention_heads=12; allowed: 1, 2, 3, 4, 6, 12/],
    ['#seq', '0', 'config.seq', /positive integer/],
    ['#micro_batch', '1.5', 'config.micro_batch', /positive integer/],
    ['#pp', '5', 'config.pp', /not divisible/],
    ['#recompute', 'sometimes', 'config.recompute', /allowed: none, selective, full/],
    ['#seq', '4096', 'config.seq', /learned position table/],
  ];
  for (const [sel, value, field, message] of cases) {
    await settle(page, () => page.fill(sel, value));
    const text = await page.textContent(`[data-err="${field}"]`);
    assert.match(text, message, `${sel}=${value}`);
    assert.ok(text.includes(field), `${sel}=${value}: the message names ${field}`);
    assert.equal(await page.getAttribute('body', 'data-state'), 'error');
    assert.equal(await page.textContent('#verdict'), before, 'the previous result stays visible');
    // ...marked as not the answer to these inputs, with the reason.
    assert.equal(await page.getAttribute('#results', 'data-stale'), '1');
    assert.match(await page.textContent('#status'), /Not updated: .*previous inputs/);
    await settle(page, () => page.fill(sel, { '#tp': '1', '#seq': '1024', '#micro_batch': '1', '#pp': '1', '#recompute': 'selective' }[sel]));
    assert.equal(await page.getAttribute('body', 'data-state'), 'ok');
    assert.equal(await page.getAttribute('#results', 'data-stale'), '0');
  }
  await page.close();
});

test('a pasted Hugging Face config.json is used, and a bad one is reported beside the box', async () => {
  const { page } = await open('preset=gpt2&seq=1024');
  await page.click('#custom-model summary');
  await page.fill('#model-json', JSON.stringify({ model_type: 'llama', hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8,
    num_hidden_layers: 32, intermediate_size: 14336, vocab_size: 128256, rope_theta: 500000.0, torch_dtype: 'bfloat16' }));
  await settle(page, () => page.click('#use-model'));
  assert.match(await page.textContent('dd[data-key="model"]'), /8,030,261,248/);
  // The model box names the pasted model and its size, not the preset chosen before.
  const chosen = await page.$eval('#preset', (s) => s.options[s.selectedIndex].textContent);
  assert.match(chosen, /pasted config\.json: .*8\.03 B parameters/);
  const verdict = await page.textContent('#verdict');
  await settle(page, async () => {
    await page.fill('#model-json', '{"model_type": "t5", "d_model": 512}');
    await page.click('#use-model');
  });
  assert.match(await page.textContent('[data-err="model"]'), /model\.model_type: 't5' is not a supported architecture/);
  // A rejected config.json: the previous answer stays, marked as not this input's.
  assert.equal(await page.textContent('#verdict'), verdict);
  assert.equal(await page.getAttribute('#results', 'data-stale'), '1');
  assert.match(await page.textContent('#status'), /Not updated: model\.model_type/);
  await page.close();
});

test('the URL hash reproduces the view in a new page', async () => {
  const { page } = await open('preset=llama-3.1-8b&gpu=a100-80gb');
  await settle(page, async () => {
    await page.fill('#seq', '8192');
    await page.fill('#tp', '2');
    await page.check('#sp');
    await page.fill('#recompute', 'every:4');
  });
  await page.waitForSelector('body[data-state="ok"]');
  const url = page.url();
  const peak = await page.getAttribute('#verdict', 'data-peak');
  const perLayer = await page.textContent('#per-layer-bytes');
  const fresh = await browser.newPage();
  await fresh.goto(url);
  await fresh.waitForSelector('body[data-ready="1"]');
  assert.equal(await fresh.getAttribute('#verdict', 'data-peak'), peak);
  assert.equal(await fresh.textContent('#per-layer-bytes'), perLayer);
  assert.equal(await fresh.inputValue('#recompute'), 'every:4');
  assert.ok(await fresh.isChecked('#sp'));
  await fresh.close();
  await page.close();
});

test('markup injected through the hash is shown as text, never parsed', async () => {
  const evil = encodeURIComponent('<img src=x onerror="window.pwned=1">');
  const page = await browser.newPage();
  await page.goto(`${base}/index.html#preset=${evil}`);
  await page.waitForSelector('body[data-state="error"]');
  const msg = await page.textContent('[data-err="preset"]');
  assert.ok(msg.includes('<img src=x onerror="window.pwned=1">'), msg);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/);
  // A link with one bad value still shows an answer (without that value), marked with the reason.
  await page.waitForSelector('body[data-ready="1"]');
  assert.match(await page.textContent('#verdict'), /Fits|Does not fit|Peak/);
  assert.equal(await page.getAttribute('#results', 'data-stale'), '1');
  assert.ok((await page.textContent('#status')).includes('<img src=x onerror="window.pwned=1">'));
  await page.close();
});

test('the single-file build works from file://, without a console error', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.text()); });
  await page.goto(pathToFileURL(join(dist, 'actmem.html')).href + '#preset=gpt2&seq=1024&gpu=rtx-4090');
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  const n = native(['--preset', 'gpt2', '--seq', '1024', '--gpu', 'rtx-4090', '--attention', 'flash', '--recompute', 'selective']);
  assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes));
  assert.deepEqual(errors, []);
  await page.close();
});

// The first view (web/build-pages.mjs): the build asked the engine the page's first request and
// put both in the pages; the page draws that answer at once when opened without a link.
test('opened without a link, both pages draw the build\'s first view at once: web/first-request.json is the page\'s first request, its answer the native CLI\'s byte for byte, and the next input goes to the engine', async () => {
  const request = (await readFile(join(root, 'web', 'first-request.json'), 'utf8')).trim();
  const answer = execFileSync(cli, ['requests', '-'], { input: request + '\n', encoding: 'utf8' }).trim();
  const block = `<script id="first-view" type="application/json">${`{"request":${request},"answer":${answer}}`.replace(/</g, '\\u003c')}</script>`;
  for (const f of ['index.html', 'actmem.html'])
    assert.ok((await readFile(join(dist, f), 'utf8')).includes(block), `dist/${f} does not hold the native answer to web/first-request.json: rebuild the page`);
  for (const url of [`${base}/index.html`, pathToFileURL(join(dist, 'actmem.html')).href]) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.addInitScript(() => {
      window.posted = [];
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (m, ...rest) { if (m && m.request) window.posted.push({ lane: m.lane, request: m.request }); return post.call(this, m, ...rest); };
    });
    await page.goto(url);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
    const posted = await page.evaluate(() => window.posted);
    const asked = posted.filter((m) => m.lane === 'view' || m.lane === 'warm').map((m) => m.request);
    assert.equal(await page.getAttribute('body', 'data-first-view'), 'build',
      `${url}: the page's first request is not web/first-request.json; write there what it asked: ${asked[0]}`);
    // No view was asked of the engine; the worker is given the same request to warm up on, twice.
    assert.deepEqual(posted.filter((m) => m.lane !== 'export'), [{ lane: 'warm', request }, { lane: 'warm', request }], url);
    assert.equal(await page.getAttribute('#status', 'data-kind'), 'current', url);
    assert.equal(await page.getAttribute('#results', 'data-stale'), '0', url);
    const n = native(['--preset', 'llama-3.1-8b', '--gpu', 'h100-80gb', '--dp', '8', '--zero', '1', '--seq', '4096', '--attention', 'flash', '--recompute', 'selective']);
    assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes), url);
    // The next input is the engine's to answer.
    await settle(page, () => page.fill('#seq', '2048'));
    const n2 = native(['--preset', 'llama-3.1-8b', '--gpu', 'h100-80gb', '--dp', '8', '--zero', '1', '--seq', '2048', '--attention', 'flash', '--recompute', 'selective']);
    assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n2.peak_bytes), url);
    assert.ok((await page.evaluate(() => window.posted)).some((m) => m.lane === 'view' && JSON.parse(m.request).config.seq === 2048), url);
    assert.deepEqual(errors, [], url);
    await page.close();
  }
});

test('the page\'s script: dist/app.js is web/app/ joined in build-app.mjs\'s order, the single file inlines that text, and no name reaches window', async () => {
  const app = await readFile(join(dist, 'app.js'), 'utf8');
  assert.ok(app === buildApp(join(root, 'web', 'app')), 'dist/app.js is not web/app/ as build-app.mjs joins it: rebuild the page');
  assert.ok((await readFile(join(dist, 'actmem.html'), 'utf8')).includes(`<script>${app}</script>`));
  // The state object and every function stay inside the script's one function scope; the page
  // sets only the names it documents (tests and embedders read them).
  const { page, errors } = await open('preset=gpt2');
  assert.deepEqual(await page.evaluate(() => ['state', 'draw', 'update', 'readForm', 'boot', 'el', 'fmt'].filter((n) => n in window)), []);
  assert.deepEqual(await page.evaluate(() => ['actmem', 'actmemTimings', 'actmemRequests'].filter((n) => !(n in window))), []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('embed mode inside an iframe reports its height to the parent', async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/embed-host.html`);
  await page.waitForFunction(() => window.heights.length > 0, null, { timeout: 30000 });
  const heights = await page.evaluate(() => window.heights);
  assert.ok(heights.at(-1) > 100, `height ${heights.at(-1)}`);
  const frame = page.frames().find((f) => f.url().includes('embed=1'));
  assert.equal(await frame.evaluate(() => document.body.classList.contains('embed')), true);
  assert.equal(await frame.isVisible('#inputs'), false);
  await frame.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  // The embed says what it shows and links to the full calculator with the same state.
  const line = await frame.textContent('#embed-summary');
  assert.match(line, /^GPT-2 \(124M\) · sequence 1,024 · micro-batch 1 · tp 1 × pp 1 × cp 1 × dp 1 · /);
  const href = await frame.getAttribute('#open-full', 'href');
  assert.match(href, /preset=gpt2/);
  assert.ok(!href.includes('embed=1'), href);
  assert.ok(await frame.isVisible('#open-full'));
  await page.screenshot({ path: join(shots, 'embed.png') });
  await page.close();
});

test('a bad value in an embed shows its message where the reader sees it, and the answer without it', async () => {
  const page = await browser.newPage({ viewport: { width: 700, height: 500 } });
  await page.goto(`${base}/index.html#preset=gpt2&seq=1024&tp=5&embed=1`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  assert.ok(await page.isVisible('#status'));
  assert.match(await page.textContent('#status'), /config\.tp: tp=5 does not divide num_attention_heads=12/);
  assert.match(await page.textContent('#verdict'), /Fits|Does not fit|Peak/);
  assert.equal(await page.getAttribute('#results', 'data-stale'), '1');
  await page.screenshot({ path: join(shots, 'embed-error.png') });
  await page.close();
});

test('worked examples load with one click and show the seed\'s number beside the engine\'s', async () => {
  const { page } = await open('preset=gpt2&seq=1024');
  await settle(page, () => page.selectOption('#example', 'seed000-70b-layer-table'));
  await page.waitForSelector('#example-panel:not([hidden])');
  const cell = await page.textContent('td[data-quantity="per_layer.activation_bytes"]');
  assert.equal(digits(cell), '4462739456');
  assert.match(await page.textContent('#example-checks'), /~4\.5 GB/);
  await page.close();
});

test('a worked example runs its configuration verbatim: hidden_dropout 0 stays 0 (seed 000, standard attention)', async () => {
  const { page } = await open('preset=gpt2&seq=1024');
  await settle(page, () => page.selectOption('#example', 'seed000-standard-7b'));
  // presets/examples/seed000-standard-7b.json: attention dropout 0.1, hidden dropout 0.0.
  const n = native(['--preset', 'llama-3.1-8b', '--micro-batch', '1', '--seq', '4096', '--dtype', 'bf16', '--attention', 'eager',
    '--attention-dropout', '0.1', '--hidden-dropout', '0.0', '--profile', 'textbook', '--recompute', 'none']);
  assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes));
  assert.equal(digits(await page.textContent('td[data-quantity="per_layer.activation_bytes"]')), String(n.per_layer.activation_bytes));
  assert.equal(n.per_layer.activation_bytes, 2231369728);  // the example's expected_bytes
  await page.close();
});

test('Export JSON writes the timeline of the answer on screen, also when a link\'s bad value was dropped', async () => {
  const page = await browser.newPage({ acceptDownloads: true });
  await page.goto(`${base}/index.html#preset=gpt2&seq=1024&tp=5`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  assert.equal(await page.getAttribute('body', 'data-state'), 'error');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
  const saved = JSON.parse(await readFile(await download.path(), 'utf8'));
  assert.equal(saved.timeline.ok, true);
  assert.equal(saved.timeline.stages[0].peak_bytes, saved.view.verdict.peak_bytes);
  await page.close();
});

test('the preset filter narrows the list by family, id or name; Enter chooses the first shown', async () => {
  const { page, errors } = await open('preset=gpt2&seq=1024');
  const shown = () => page.$$eval('#preset option', (os) => os.filter((o) => !o.hidden && !o.parentElement.hidden).map((o) => o.value));
  const before = await page.evaluate(() => window.actmemRequests);
  await page.fill('#preset-search', 'DEEPSEEK');
  assert.deepEqual(await shown(), ['deepseek-v2-lite', 'deepseek-v3']);
  await page.fill('#preset-search', 'falcon');
  assert.deepEqual(await shown(), ['falcon-7b']);
  // Filtering sends nothing; the shown answer is still gpt2's.
  await page.waitForTimeout(100);
  assert.equal(await page.evaluate(() => window.actmemRequests), before);
  await settle(page, () => page.press('#preset-search', 'Enter'));
  assert.equal(await page.$eval('#preset', (s) => s.value), 'falcon-7b');
  const n = native(['--preset', 'falcon-7b', '--seq', '1024', '--attention', 'flash']);
  assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes));
  await page.fill('#preset-search', '');
  assert.ok((await shown()).length >= 26);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a dropped snapshot is compared with the prediction; a wrong file is refused beside the drop zone', async () => {
  const { page } = await open('preset=gpt2&seq=128&gpu=h100-80gb');
  // tests/data/snapshots/tiny-trace.pickle: a hand-worked step whose peaks are 22 MiB allocated and
  // 32 MiB reserved (tests/reference/make_snapshots.py).
  await page.setInputFiles('#snapshot-file', join(root, 'tests', 'data', 'snapshots', 'tiny-trace.pickle'));
  await page.waitForSelector('#compare-panel[data-state="ok"]', { timeout: 30000 });
  assert.equal(await page.isVisible('#compare-result'), true);
  const cells = await page.$$eval('#compare-table tbody tr[data-key="allocated"] td', (tds) => tds.map((t) => t.textContent));
  assert.equal(cells[1], '22.00 MiB');
  const reserved = await page.$$eval('#compare-table tbody tr[data-key="reserved"] td', (tds) => tds.map((t) => t.textContent));
  assert.equal(reserved[1], '32.00 MiB');
  assert.equal(await page.$$eval('#compare-blocks tbody tr', (r) => r.length), 3);
  assert.match(await page.textContent('#compare-blocks'), /forward \(train\.py:11\)/);
  // Any other file: the engine's message where the reader looks, nothing drawn as an answer.
  await page.setInputFiles('#snapshot-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a pickle') });
  await page.waitForSelector('#compare-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-err="snapshot"]'), /^snapshot: not a memory snapshot pickle at byte 0/);
  assert.equal(await page.isVisible('#compare-result'), false);
  await page.close();
});

// The engine's JSON entry on the native CLI: one request line, its answer (the page's worker
// answers the same request through the wasm build).
function nativeRequest(req) {
  return JSON.parse(execFileSync(cli, ['requests', '-'], { input: JSON.stringify(req) + '\n', encoding: 'utf8' }));
}

test('key coverage: every request key the engine reads has a control on the page, each with a label and a tooltip naming its default, or a stated reason', async () => {
  const engineKeys = JSON.parse(execFileSync(cli, ['presets', '--json'], { encoding: 'utf8' })).options.config_keys;
  const { page, errors } = await open('preset=gpt2&seq=1024');
  const controls = await page.$$eval('[data-field^="config."]', (ns) => ns.map((n) => n.dataset.field.slice(7)));
  const reasons = await page.$$eval('.not-on-page[data-key]', (ns) => ns.map((n) => n.dataset.key));
  const page_ = new Set([...controls, ...reasons]);
  assert.deepEqual(engineKeys.filter((k) => !page_.has(k)), [], 'engine keys without a control');
  assert.deepEqual([...page_].filter((k) => !engineKeys.includes(k)), [], 'controls for keys the engine does not read');
  const tips = await page.$$eval('#option-groups label', (ls) => ls.map((l) => [l.textContent.trim(), l.dataset.tip || '']));
  for (const [label, tipText] of tips) assert.match(tipText, /Default/, label);
  assert.deepEqual(errors, []);
  await page.close();
});

test('framework, float8, LoRA and optimizer options: the page answers the CLI\'s numbers for the same request, defaults named from the framework', async () => {
  const cases = [
    { hash: 'preset=llama-3.1-8b&gpu=h100-80gb&seq=8192&micro_batch=2&dp=8&framework=torchtitan&float8=tensorwise&float8_all_gather=true',
      config: { micro_batch: 2, seq: 8192, tp: 1, pp: 1, vpp: 1, cp: 1, dp: 8, ep: 1, gpu: 'h100-80gb', framework: 'torchtitan', float8: 'tensorwise', float8_all_gather: true } },
    { hash: 'preset=llama-3.1-8b&gpu=a100-80gb&seq=4096&attention=flash&profile=hf&recompute=none&lora_rank=16&lora_targets=q_proj,v_proj,o_proj&qlora=true&lora_dtype=bf16',
      config: { micro_batch: 1, seq: 4096, tp: 1, pp: 1, vpp: 1, cp: 1, dp: 1, ep: 1, zero: 0, dtype: 'bf16', attention: 'flash', optimizer: 'adamw', profile: 'hf', schedule: '1f1b', recompute: 'none', gpu: 'a100-80gb', lora_rank: 16, lora_targets: ['q_proj', 'v_proj', 'o_proj'], qlora: true, lora_dtype: 'bf16' } },
    { hash: 'preset=gpt2&gpu=rtx-4090&seq=1024&profile=pytorch&recompute=none&optimizer_impl=for-loop&alloc_conf=expandable_segments:True&fragmentation_pct=0',
      config: { micro_batch: 1, seq: 1024, tp: 1, pp: 1, vpp: 1, cp: 1, dp: 1, ep: 1, zero: 0, dtype: 'bf16', attention: 'flash', optimizer: 'adamw', profile: 'pytorch', schedule: '1f1b', recompute: 'none', gpu: 'rtx-4090', optimizer_impl: 'for-loop', alloc_conf: 'expandable_segments:True', fragmentation_pct: 0 } },
  ];
  for (const c of cases) {
    const preset = new URLSearchParams(c.hash).get('preset');
    const n = nativeRequest({ preset, config: c.config });
    assert.equal(n.ok, true, JSON.stringify(n.error));
    const { page, errors } = await open(c.hash);
    assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes), c.hash);
    assert.equal(await page.getAttribute('#verdict', 'data-total'), String(n.device.total_bytes), c.hash);
    assert.equal(digits(await page.textContent('#per-layer-bytes')), String(n.per_layer.activation_bytes), c.hash);
    assert.deepEqual(errors, []);
    if (c.config.framework === 'torchtitan') {
      // The framework's defaults, shown where the user left the field empty.
      assert.equal(await page.$eval('#profile', (s) => s.options[0].textContent), 'torchtitan: pytorch');
      assert.equal(await page.$eval('#opt-optimizer_impl', (s) => s.options[0].textContent), 'torchtitan: foreach');
      assert.equal(await page.$eval('#opt-param_dtype', (s) => s.options[0].textContent), 'torchtitan: fp32');
      await page.screenshot({ path: join(shots, 'torchtitan-float8.png'), fullPage: true });
    }
    await page.close();
  }
});

// What the form sends before any change (index.html's values, main.js's selections).
const formBase = { micro_batch: 1, seq: 4096, tp: 1, pp: 1, vpp: 1, cp: 1, dp: 1, ep: 1, zero: 0, dtype: 'bf16', attention: 'flash',
  optimizer: 'adamw', profile: 'megatron', schedule: '1f1b', recompute: 'selective' };

test('bad values in the options show the engine\'s message beside the field, the previous answer marked stale', async () => {
  const { page } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&dp=8');
  await page.click('#options summary');
  const before = await page.textContent('#verdict');
  const cases = [
    ['#opt-dp_replicate', '3', 'config.dp_replicate'],
    ['#opt-grad_bucket_bytes', '-5', 'config.grad_bucket_bytes'],
    ['#opt-alloc_conf', 'bogus:1', 'config.alloc_conf'],
    ['#opt-moe_imbalance', '-2', 'config.moe_imbalance'],
    ['#opt-loss', 'chunked:1', 'config.loss'],
  ];
  for (const [sel, value, field] of cases) {
    await settle(page, () => page.fill(sel, value));
    const text = await page.textContent(`[data-err="${field}"]`);
    assert.ok(text.startsWith(field), `${sel}=${value}: ${text}`);
    // The engine's own message for the request the page sent (the form's fields and this option).
    const option = ['#opt-moe_imbalance', '#opt-dp_replicate', '#opt-grad_bucket_bytes'].includes(sel) ? Number(value) : value;
    const config = { ...formBase, seq: 4096, dp: 8, gpu: 'h100-80gb', [field.slice(7)]: option };
    assert.equal(text, nativeRequest({ preset: 'llama-3.1-8b', config }).error.message);
    assert.equal(await page.textContent('#verdict'), before);
    assert.equal(await page.getAttribute('#results', 'data-stale'), '1');
    await settle(page, () => page.fill(sel, ''));
    assert.equal(await page.getAttribute('#results', 'data-stale'), '0');
  }
  await page.close();
});

test('options that apply only beside another setting are disabled with the reason until it is set', async () => {
  const { page, errors } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&profile=hf');
  await page.click('#options summary');
  assert.equal(await page.isDisabled('#opt-lora_targets'), true);
  assert.match(await page.$eval('#opt-lora_targets', (c) => c.closest('label').dataset.tip), /Not now: applies with a LoRA rank/);
  assert.equal(await page.isDisabled('#opt-float8_all_gather'), true);
  await settle(page, () => page.fill('#opt-lora_rank', '8'));
  assert.equal(await page.isDisabled('#opt-lora_targets'), false);
  assert.doesNotMatch(await page.$eval('#opt-lora_targets', (c) => c.closest('label').dataset.tip), /Not now/);
  await settle(page, () => page.selectOption('#opt-float8', 'tensorwise'));
  assert.equal(await page.isDisabled('#opt-float8_all_gather'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('options travel in the URL: a link with them opens the same answer, an old link without them its old one', async () => {
  const { page } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&dp=8&zero=1');
  const old = await page.getAttribute('#verdict', 'data-peak');
  await settle(page, async () => { await page.click('#options summary'); await page.selectOption('#opt-optimizer_impl', 'foreach'); await page.fill('#opt-grad_bucket_bytes', '1048576'); });
  const url = page.url();
  assert.match(url, /optimizer_impl=foreach/);
  const fresh = await browser.newPage();
  await fresh.goto(url);
  await fresh.waitForSelector('body[data-ready="1"]');
  assert.equal(await fresh.getAttribute('#verdict', 'data-peak'), await page.getAttribute('#verdict', 'data-peak'));
  assert.equal(await fresh.inputValue('#opt-grad_bucket_bytes'), '1048576');
  await fresh.close();
  const { page: again } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&dp=8&zero=1');
  assert.equal(await again.getAttribute('#verdict', 'data-peak'), old);
  await again.close();
  await page.close();
});

test('a pasted Megatron-LM argument list and a pasted torchtitan TOML are the run the page shows, equal to the CLI; copy writes the launch config of the layout shown', async () => {
  const args = '--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 2 --seq-length 4096 --bf16 --use-distributed-optimizer --recompute-activations\n';
  const toml = await readFile(join(root, 'tests', 'data', 'torchtitan', 'emitted', 'fsdp8_op.toml'), 'utf8');
  for (const [kind, text, preset] of [['megatron_args', args, 'llama-3.1-8b'], ['torchtitan_toml', toml, 'llama-3.1-8b']]) {
    const { page, errors } = await open(`preset=${preset}&gpu=h100-80gb`);
    await page.click('#launch summary');
    await page.selectOption('#launch-kind', kind);
    await page.fill('#launch-text', text);
    await settle(page, () => page.click('#use-launch'));
    const n = nativeRequest({ preset, [kind]: text, config: { gpu: 'h100-80gb' } });
    assert.equal(n.ok, true, JSON.stringify(n.error));
    assert.equal(await page.getAttribute('#verdict', 'data-peak'), String(n.peak_bytes), kind);
    assert.equal(await page.getAttribute('#verdict', 'data-total'), String(n.device.total_bytes), kind);
    // Each field shows the value the launch config set.
    assert.equal(await page.getAttribute('#tp', 'placeholder'), 'default: ' + n.config.tp);
    assert.deepEqual(errors, []);
    if (kind === 'megatron_args') await page.screenshot({ path: join(shots, 'megatron-args.png'), fullPage: true });
    await page.close();
  }
  // Copy out: the layout on screen written as torchtitan's TOML, as `actmem estimate --emit torchtitan`.
  const { page } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=8192&dp=8&framework=torchtitan');
  await page.click('#launch summary');
  await page.click('#copy-torchtitan');
  await page.waitForSelector('#launch-note:not(:empty)');
  const emitted = nativeRequest({ preset: 'llama-3.1-8b', emit: 'torchtitan', config: { micro_batch: 1, seq: 8192, tp: 1, pp: 1, vpp: 1, cp: 1, dp: 8, ep: 1, gpu: 'h100-80gb', framework: 'torchtitan' } });
  assert.equal(await page.inputValue('#launch-text'), emitted.text);
  await page.close();
});

test('a select change sends one engine request', async () => {
  const { page } = await open('preset=gpt2&seq=1024&gpu=rtx-4090');
  for (const [sel, value] of [['#attention', 'eager'], ['#profile', 'hf'], ['#zero', '1']]) {
    const before = await page.evaluate(() => window.actmemRequests);
    await settle(page, () => page.selectOption(sel, value));
    await page.waitForTimeout(100);
    assert.equal(await page.evaluate(() => window.actmemRequests) - before, 1, sel);
  }
  await page.close();
});

test('a suggested change, applied with one click, makes the configuration fit', async () => {
  const { page } = await open('preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&attention=flash&recompute=none&micro_batch=4');
  assert.match(await page.textContent('#verdict'), /^Does not fit: needs .* GiB per GPU, .* GiB more than the 79\.6 GiB of each of 64 GPUs\.$/);
  const fixes = await page.$$('button.fix');
  assert.ok(fixes.length >= 1);
  for (let i = 0; i < fixes.length; i++) {
    const { page: p } = await open('preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&attention=flash&recompute=none&micro_batch=4');
    const button = (await p.$$('button.fix'))[i];
    const change = JSON.parse(await button.getAttribute('data-change'));
    await settle(p, () => button.click());
    assert.match(await p.textContent('#verdict'), /^Fits: /, JSON.stringify(change));
    assert.equal(await p.getAttribute('#verdict', 'class'), 'fade verdict ok');
    await p.close();
  }
  // 8B on one GPU: nothing but more GPUs helps, and the engine says how many.
  const { page: one } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=4096&dp=1&zero=0');
  assert.match(await one.textContent('#suggestions'), /4 GPUs \(dp 4\) \+ ZeRO stage 3/);
  await settle(one, () => one.click('button.fix'));
  assert.match(await one.textContent('#verdict'), /^Fits: .* on 4 GPUs\.$/);
  await one.screenshot({ path: join(shots, 'suggestion-applied.png') });
  await one.close();
  await page.close();
});

test('Find a layout: the engine\'s ranked layouts, one applied with one click fits; a bad GPU count is refused beside its field', async () => {
  const { page, errors } = await open('preset=llama-3.1-8b&gpu=h100-80gb&seq=8192&attention=flash');
  await page.fill('#advise-gpus', '8');
  await page.fill('#advise-batch', '64');
  await page.click('#advise-run');
  await page.waitForSelector('#advise-panel[data-state="ok"]', { timeout: 60000 });
  const rows = await page.$$('#advise-table tbody tr');
  assert.ok(rows.length >= 1 && rows.length <= 5, String(rows.length));
  // The table is the engine's answer: the same layouts, in the same order, as the native CLI.
  const native5 = JSON.parse(execFileSync(cli, ['advise', '--preset', 'llama-3.1-8b', '--gpu', 'h100-80gb', '--seq', '8192', '--attention', 'flash', '--num-gpus', '8', '--global-batch', '64', '--limit', '5', '--json'], { encoding: 'utf8' }));
  const changes = await page.$$eval('#advise-table button.apply', (bs) => bs.map((b) => JSON.parse(b.dataset.change)));
  assert.deepEqual(changes, native5.layouts.map((l) => l.config));
  // A layout's launch config in one click: the engine's emit of the form's request with that
  // layout, as the CLI answers it (here a zero-bubble layout, which Megatron-LM cannot launch:
  // the engine's refusal is what the note shows).
  await page.click('#advise-table button.copy-layout');
  await page.waitForSelector('#launch-note:not(:empty)');
  const layout = { ...changes[0] };
  if (Array.isArray(layout.layer_split) && layout.layer_split.length === 0) delete layout.layer_split;
  const emitted = nativeRequest({ preset: 'llama-3.1-8b', emit: 'megatron', config: { ...formBase, seq: 8192, gpu: 'h100-80gb', ...layout } });
  if (emitted.ok) assert.equal(await page.inputValue('#launch-text'), emitted.text);
  else assert.equal(await page.textContent('#launch-note'), emitted.error.message);
  await settle(page, () => page.click('#advise-table button.apply'));
  assert.match(await page.textContent('#verdict'), /^Fits: .* on 8 GPUs\.$/);
  assert.equal(await page.inputValue('#tp'), String(changes[0].tp));
  assert.equal(await page.inputValue('#micro_batches'), String(changes[0].micro_batches));
  assert.equal(await page.isChecked('#sp'), changes[0].sp);
  await page.screenshot({ path: join(shots, 'advise.png') });
  // A range written backwards: the engine's message beside the GPU count, no table.
  await page.fill('#advise-gpus', '9:3');
  await page.click('#advise-run');
  await page.waitForSelector('#advise-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-err="advise.num_gpus"]'), /^advise\.num_gpus: 9:3 is not allowed/);
  assert.equal(await page.$$eval('#advise-table tbody tr', (r) => r.length), 0);
  // The 405B search over 1,024 GPUs: its engine time recorded (docs/performance.md), not asserted.
  const { page: big } = await open('preset=llama-3.1-405b&gpu=h100-80gb&seq=8192&attention=flash');
  await big.fill('#advise-gpus', '1024');
  await big.fill('#advise-batch', '2048');
  await big.click('#advise-run');
  await big.waitForSelector('#advise-panel[data-state="ok"]', { timeout: 60000 });
  console.log(`# advise llama-3.1-405b over 1,024 GPUs in the page's worker: ${await big.getAttribute('#advise-panel', 'data-ms')} ms`);
  await big.close();
  assert.deepEqual(errors, []);
  await page.close();
});

test('RL step: verl\'s GRPO beside a vLLM rollout, phase by phase, the CLI\'s answer; a bad utilization is refused beside its field', async () => {
  const { page, errors } = await open('preset=qwen2.5-7b&gpu=h100-80gb&seq=4096&micro_batch=4');
  await page.fill('#rl-gpus', '8');
  await page.fill('#rl-response', '3072');
  await page.check('#rl-reference');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  // The panel's answer is the engine's for the request it sent, and the CLI's flags ask the same.
  const req = JSON.parse(await page.getAttribute('#rl-panel', 'data-request'));
  const answer = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.deepEqual(answer, nativeRequest(req));
  const flags = JSON.parse(execFileSync(cli, ['rl', '--preset', 'qwen2.5-7b', '--gpu', 'h100-80gb', '--seq', '4096', '--micro-batch', '4', '--dp', '8',
    '--response-len', '3072', '--rl', 'algorithm=grpo', '--rl', 'reference=true', '--rl', 'param_offload=false', '--rl', 'optimizer_offload=false',
    '--rl', 'rollout.tp=2', '--rl', 'rollout.gpu_memory_utilization=0.5', '--rl', 'rollout.free_cache_engine=true', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(answer, flags);
  const rows = await page.$$eval('#rl-table tbody tr', (r) => r.map((tr) => tr.dataset.phase));
  assert.deepEqual(rows, answer.phases.map((p) => p.id));
  assert.equal(await page.getAttribute('#rl-table tr.peak', 'data-phase'), answer.peak.phase);
  assert.match(await page.textContent('#rl-summary'), /^Fits: the peak is .* in generation/);
  await (await page.$('#rl-panel')).screenshot({ path: join(shots, 'rl.png') });
  // PPO adds the critic's phases.
  await page.selectOption('#rl-algorithm', 'ppo');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-table tr[data-phase="critic_update"]', { timeout: 60000 });
  // SGLang as verl's rollout: the CLI's answer for the same flags, its pool in the summary.
  await page.selectOption('#rl-algorithm', 'grpo');
  await page.selectOption('#rl-verl-engine', 'sglang');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-summary:has-text("SGLang:")', { timeout: 60000 });
  const sg = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  const sgFlags = JSON.parse(execFileSync(cli, ['rl', '--preset', 'qwen2.5-7b', '--gpu', 'h100-80gb', '--seq', '4096', '--micro-batch', '4', '--dp', '8',
    '--response-len', '3072', '--rl', 'algorithm=grpo', '--rl', 'reference=true', '--rl', 'param_offload=false', '--rl', 'optimizer_offload=false',
    '--rl', 'rollout.tp=2', '--rl', 'rollout.gpu_memory_utilization=0.5', '--rl', 'rollout.free_cache_engine=true', '--rl', 'rollout.engine=sglang', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(sg, sgFlags);
  assert.match(await page.textContent('#rl-summary'), /SGLang: .* of KV pool = [0-9,]+ tokens/);
  // verl runs LoRA with vLLM only: the field is off with SGLang, on again with vLLM.
  assert.equal(await page.isDisabled('#rl-lora'), true);
  await page.selectOption('#rl-verl-engine', 'vllm');
  assert.equal(await page.isDisabled('#rl-lora'), false);
  // LoRA in verl's step, the adapters gathered one layer at a time: the CLI's answer, and the
  // collection before the sync as its own phase.
  await page.fill('#rl-lora', '32');
  await page.check('#rl-layered');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-table tr[data-phase="lora_collect"]', { timeout: 60000 });
  const lo = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  const loFlags = JSON.parse(execFileSync(cli, ['rl', '--preset', 'qwen2.5-7b', '--gpu', 'h100-80gb', '--seq', '4096', '--micro-batch', '4', '--dp', '8',
    '--response-len', '3072', '--lora-rank', '32', '--rl', 'algorithm=grpo', '--rl', 'reference=true', '--rl', 'param_offload=false', '--rl', 'optimizer_offload=false',
    '--rl', 'rollout.tp=2', '--rl', 'rollout.gpu_memory_utilization=0.5', '--rl', 'rollout.free_cache_engine=true', '--rl', 'rollout.layered_summon=true', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(lo, loFlags);
  assert.equal(lo.vllm.max_lora_rank, 32);
  await page.fill('#rl-lora', '');
  await page.uncheck('#rl-layered');
  // vLLM's expert parallelism on a dense model: the engine's message beside the EP field.
  await page.fill('#rl-ep', '4');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-rl-err="rl.rollout.expert_parallel_size"]'), /no routed experts/);
  await page.fill('#rl-ep', '');
  // A utilization outside (0, 1]: the engine's message beside the field, no table.
  await page.fill('#rl-util', '1.5');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.equal(await page.textContent('[data-rl-err="rl.rollout.gpu_memory_utilization"]'),
    'rl.rollout.gpu_memory_utilization: 1.5 is outside (0, 1] (vLLM\'s fraction of the GPU\'s total)');
  assert.equal(await page.$$eval('#rl-table tbody tr', (r) => r.length), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('RL step: TRL\'s GRPOTrainer (DeepSpeed ZeRO-3, vLLM colocated, then a vLLM server) is the CLI\'s answer; a rollout tp that does not divide the GPUs is refused beside its field', async () => {
  const { page, errors } = await open('preset=qwen2.5-7b&gpu=h100-80gb&seq=1024&micro_batch=4');
  // TRL's controls appear and the rollout's defaults become TRL's; verl's offloads are hidden.
  assert.equal(await page.isVisible('#rl-engine'), false);
  await page.selectOption('#rl-framework', 'trl');
  assert.equal(await page.isVisible('#rl-engine'), true);
  assert.equal(await page.isVisible('#rl-param-offload'), false);
  assert.equal(await page.inputValue('#rl-tp'), '1');
  assert.equal(await page.inputValue('#rl-util'), '0.3');
  await page.fill('#rl-gpus', '8');
  await page.selectOption('#rl-trainer', 'zero3');
  await page.selectOption('#rl-engine', 'colocate');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const req = JSON.parse(await page.getAttribute('#rl-panel', 'data-request'));
  const answer = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.equal(answer.framework, 'trl');
  assert.deepEqual(answer, nativeRequest(req));
  const flags = JSON.parse(execFileSync(cli, ['rl', '--preset', 'qwen2.5-7b', '--gpu', 'h100-80gb', '--seq', '1024', '--micro-batch', '4', '--dp', '8',
    '--framework', 'deepspeed', '--zero', '3', '--rl', 'framework=trl', '--rl', 'algorithm=grpo', '--rl', 'reference=false', '--rl', 'rollout.engine=vllm',
    '--rl', 'rollout.mode=colocate', '--rl', 'rollout.tp=1', '--rl', 'rollout.gpu_memory_utilization=0.3', '--rl', 'rollout.free_cache_engine=false', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(answer, flags);
  const rows = await page.$$eval('#rl-table tbody tr', (r) => r.map((tr) => tr.dataset.phase));
  assert.deepEqual(rows, ['weight_sync', 'generate', 'old_log_prob', 'update']);
  assert.match(await page.textContent('#rl-summary'), /^Fits: the peak is .* in policy update.*vLLM: a /);
  await (await page.$('#rl-panel')).screenshot({ path: join(shots, 'rl-trl.png') });
  // A vLLM server: the vLLM settings no longer apply here, and no vLLM line is drawn.
  await page.selectOption('#rl-engine', 'server');
  assert.equal(await page.isDisabled('#rl-tp'), true);
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const served = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.equal(served.vllm.on_these_gpus, false);
  assert.deepEqual(served, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.equal(await page.$$eval('#rl-table tbody tr', (r) => r.length), served.phases.length);
  assert.match(await page.textContent('#rl-summary'), /Generation: on the vLLM server's GPUs/);
  // DPO: one phase, the CLI's answer for the request the panel sent.
  await page.selectOption('#rl-algorithm', 'dpo');
  assert.equal(await page.isDisabled('#rl-engine'), true);
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const dpo = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.equal(dpo.algorithm, 'dpo');
  assert.deepEqual(dpo, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.match(await page.textContent('#rl-summary'), /DPO: no generation/);
  await page.selectOption('#rl-algorithm', 'grpo');
  // OpenRLHF's hybrid engine: its own defaults (vLLM at 0.95, awake, a reference), then DeepSpeed's
  // sleep and vLLM at 0.5 asleep; each the CLI's answer for the request the panel sent.
  await page.selectOption('#rl-framework', 'openrlhf');
  assert.equal(await page.inputValue('#rl-util'), '0.95');
  assert.equal(await page.isVisible('#rl-ds-sleep'), true);
  await page.fill('#rl-util', '0.5');
  await page.uncheck('#rl-awake');
  await page.check('#rl-ds-sleep');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const orl = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.equal(orl.framework, 'openrlhf');
  assert.deepEqual(orl, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.equal(await page.$$eval('#rl-table tbody tr', (r) => r.length), orl.phases.length);
  // OpenRLHF's separate pools (PPO with a reward model on the critic's GPUs, 4 engines of tp 2):
  // vLLM awake and its switch locked, each pool's phases, the CLI's answer; then a reward model on
  // fewer GPUs than the critic's is refused beside its field (OpenRLHF's assertion).
  assert.equal(await page.isVisible('#rl-ref-gpus'), false);
  await page.selectOption('#rl-orl-layout', 'separate');
  assert.equal(await page.isVisible('#rl-ref-gpus'), true);
  assert.equal(await page.isChecked('#rl-awake'), true);
  assert.equal(await page.isDisabled('#rl-awake'), true);
  await page.uncheck('#rl-ds-sleep');
  await page.fill('#rl-util', '0.9');
  await page.fill('#rl-tp', '2');
  await page.selectOption('#rl-algorithm', 'ppo');
  await page.check('#rl-reward-model');
  await page.check('#rl-colocate-reward');
  await page.fill('#rl-engines', '4');
  await page.fill('#rl-critic-gpus', '4');
  await page.fill('#rl-reward-gpus', '4');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const pools = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.deepEqual(pools, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.deepEqual(pools.pools.map((p) => p.name + ':' + p.gpus), ['vllm:8', 'actor:8', 'reference:8', 'critic+reward:4']);
  assert.equal(await page.$$eval('#rl-table tbody tr[data-pool]', (r) => r.length), pools.phases.length);
  assert.equal(await page.$$eval('#rl-table tbody tr.peak', (r) => r.length), 1);
  assert.match(await page.textContent('#rl-summary'), /Pools \(28 GPUs\): vllm 8 GPUs/);
  await (await page.$('#rl-panel')).screenshot({ path: join(shots, 'rl-openrlhf-pools.png') });
  await page.fill('#rl-reward-gpus', '2');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-rl-err="rl.reward_gpus"]'), /^rl\.reward_gpus: 2 is not the critic's 4 GPUs/);
  // --ref.offload: refused beside its box under ZeRO-2, the CLI's answer under ZeRO-3.
  await page.fill('#rl-reward-gpus', '4');
  await page.check('#rl-ref-offload');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-rl-err="rl.reference_offload"]'), /^rl\.reference_offload: modelled with config\.zero 3/);
  await page.selectOption('#rl-orl-zero', '3');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const offl = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.deepEqual(offl, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.equal(offl.phases.flatMap((p) => p.lines).filter((l) => l.process === 'reference' && l.what.startsWith('parameters')).length, 0);
  await page.uncheck('#rl-ref-offload');
  await page.selectOption('#rl-orl-zero', '2');
  await page.selectOption('#rl-orl-layout', 'colocate');
  await page.selectOption('#rl-algorithm', 'grpo');
  await page.uncheck('#rl-reward-model');
  await page.selectOption('#rl-framework', 'trl');
  await page.selectOption('#rl-engine', 'colocate');
  // vLLM colocated with tp 3 on 8 GPUs: the engine's message beside the tp field.
  await page.selectOption('#rl-engine', 'colocate');
  await page.fill('#rl-tp', '3');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.equal(await page.textContent('[data-rl-err="rl.rollout.tp"]'), 'rl.rollout.tp: 3 does not divide the 8 GPUs (config.dp) into rollout replicas');
  assert.deepEqual(errors, []);
  await page.close();
});

test('RL step: TRL with LoRA (PEFT, DDP) is the CLI\'s answer, with no reference model and peft\'s merge before the sync; under ZeRO-3 the whole model is gathered for the merge; a rank of 0 is refused beside it', async () => {
  const { page, errors } = await open('preset=qwen2.5-7b&gpu=h100-80gb&seq=1024&micro_batch=4');
  await page.selectOption('#rl-framework', 'trl');
  await page.selectOption('#rl-trainer', 'zero3');
  assert.equal(await page.isDisabled('#rl-lora'), false);
  assert.match(await page.getAttribute('#rl-lora', 'title'), /peft_config/);
  await page.fill('#rl-gpus', '8');
  await page.fill('#rl-lora', '16');
  await page.selectOption('#rl-engine', 'colocate');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const z3 = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.deepEqual(z3, nativeRequest(JSON.parse(await page.getAttribute('#rl-panel', 'data-request'))));
  assert.ok(z3.phases.find((p) => p.id === 'weight_sync').lines.some((l) => l.what.startsWith('every parameter gathered at once')));
  await page.selectOption('#rl-trainer', 'ddp');
  await page.check('#rl-reference');
  await page.selectOption('#rl-engine', 'colocate');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="ok"]', { timeout: 60000 });
  const req = JSON.parse(await page.getAttribute('#rl-panel', 'data-request'));
  assert.equal(req.config.lora_rank, 16);
  assert.deepEqual(req.config.lora_targets, ['q_proj', 'v_proj']);  // peft's default for Qwen2
  const answer = JSON.parse(await page.getAttribute('#rl-panel', 'data-answer'));
  assert.deepEqual(answer, nativeRequest(req));
  for (const p of answer.phases) assert.ok(!p.lines.some((l) => l.what === 'reference parameters'));
  const sync = answer.phases.find((p) => p.id === 'weight_sync');
  assert.ok(sync.lines.some((l) => l.what.startsWith('LoRA\'s merge')));
  assert.match(await page.textContent('#rl-notes'), /PEFT: .* adapters disabled/);
  await page.fill('#rl-lora', '0');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-panel[data-state="error"]', { timeout: 30000 });
  assert.match(await page.textContent('[data-rl-err="config.lora_rank"]'), /^config\.lora_rank: 0 \(no LoRA\)/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('an error appearing shifts nothing (cumulative layout shift 0), by link and by typing', async () => {
  const { page } = await open('preset=gpt2&seq=1024&gpu=rtx-4090');
  await page.evaluate(() => { window.cls = 0; });
  await settle(page, () => page.evaluate(() => { location.hash = location.hash.replace('seq=1024', 'seq=0'); }));
  assert.equal(await page.getAttribute('body', 'data-state'), 'error');
  await settle(page, () => page.fill('#tp', '5'));
  await page.waitForTimeout(200);
  assert.equal(await page.evaluate(() => window.cls), 0);
  await page.screenshot({ path: join(shots, 'error.png') });
  await page.close();
});

test('360 px: the verdict and bar come before the form, and the status line shows whole', async () => {
  const { page } = await open('preset=llama-3.1-8b&gpu=h100-80gb&dp=8&zero=1', { width: 360, height: 800 });
  const y = (sel) => page.$eval(sel, (e) => e.getBoundingClientRect().top + window.scrollY);
  assert.ok(await y('#verdict') < await y('#inputs'), 'verdict above the form');
  assert.ok(await y('#bar') < await y('#inputs'), 'bar above the form');
  assert.ok(await y('#inputs') < await y('#timeline-panel'), 'the form before the other panels');
  // Its height is fixed (no layout shift when it changes); at 360 px it wraps to three lines.
  const [scroll, client] = await page.$eval('#status', (e) => [e.scrollHeight, e.clientHeight]);
  assert.ok(scroll <= client, `the status line is cut: ${scroll} px of text in ${client} px`);
  await page.close();
});

// WCAG 2.1 relative luminance and contrast ratio of two CSS colours.
function contrastOf(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

test('light and dark themes: text meets WCAG AA contrast (4.5:1)', async () => {
  for (const theme of ['light', 'dark']) {
    for (const hash of ['preset=llama-3.1-8b&gpu=h100-80gb&dp=8&zero=1', 'preset=llama-3.1-8b&gpu=h100-80gb']) {
      const { page } = await open(`${hash}&theme=${theme}`);
      const pairs = await page.evaluate(() => {
        const bg = (e) => { for (let n = e; n; n = n.parentElement) { const c = getComputedStyle(n).backgroundColor; if (c !== 'rgba(0, 0, 0, 0)') return c; } return 'rgb(255, 255, 255)'; };
        return ['#verdict', '#verdict-detail', '.note', 'label', 'th', 'td', '.legend li', 'footer', 'h2', 'button', '#status']
          .map((s) => document.querySelector(s)).filter(Boolean).map((e) => [e.tagName + '#' + e.id + '.' + e.className, getComputedStyle(e).color, bg(e)]);
      });
      for (const [what, fg, bg] of pairs) {
        const ratio = contrastOf(fg, bg);
        assert.ok(ratio >= 4.5, `${theme} ${what}: ${fg} on ${bg} = ${ratio.toFixed(2)}`);
      }
      await page.close();
    }
  }
});

test('light and dark screenshots, and a 360 px wide one', async () => {
  {
    const { page } = await open('');
    await page.screenshot({ path: join(shots, 'first-view.png') });
    await page.close();
  }
  for (const theme of ['light', 'dark']) {
    const { page } = await open(`preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&attention=flash&recompute=selective&theme=${theme}`);
    await page.screenshot({ path: join(shots, `${theme}.png`), fullPage: true });
    await page.close();
  }
  const { page } = await open('preset=llama-3.1-8b&gpu=h100-80gb&theme=light', { width: 360, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await page.screenshot({ path: join(shots, 'narrow-360.png'), fullPage: true });
  assert.ok(overflow <= 1, `horizontal overflow ${overflow}px at 360 px`);
  await page.close();
});

test('a slow view answers its verdict first: the searches marked pending, then the full view replaces them', async () => {
  const split = '7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7';
  // Eager attention: the 405B view at 4,096 micro-batches takes 125 ms natively, 300-500 ms in the
  // worker (with flash attention, 58 ms natively since the shortened verdicts end at their failed
  // request, 2026-12-05: its warm runs could take under 100 ms, and the test then waited in vain).
  const { page, errors } = await open(`preset=llama-3.1-405b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=16&vpp=2&micro_batches=4096&layer_split=${split}&dp=8&zero=1&attention=eager&recompute=selective`);
  // The last view took over 100 ms, so the next input asks the quick view first.
  // The partial view is read when its status line is set, in the page itself: on a fast machine
  // the full view can replace it before a round trip from here would see it.
  await page.evaluate(() => {
    document.body.dataset.ready = '0';
    const status = document.getElementById('status');
    new MutationObserver((_, obs) => {
      if (status.dataset.kind !== 'partial') return;
      window.partialSeen = { verdict: document.getElementById('verdict').textContent, fit: document.getElementById('fit').textContent,
        plan: document.getElementById('plan').textContent, stale: document.getElementById('results').dataset.stale, ready: document.body.dataset.ready };
      document.body.dataset.partialSeen = '1';  // a selector to wait for (the page's CSP refuses waitForFunction's eval)
      obs.disconnect();
    }).observe(status, { attributes: true, attributeFilter: ['data-kind'] });
  });
  await page.fill('#micro_batches', '4080');
  await page.waitForSelector('body[data-partial-seen="1"]', { state: 'attached', timeout: 30000 });
  const partial = await page.evaluate(() => window.partialSeen);
  assert.match(partial.fit, /^Searching for the largest micro-batch and sequence that fit/);
  assert.match(partial.plan, /^Planner: searching/);
  assert.equal(partial.stale, '0', 'the verdict shown is the inputs\' own');
  assert.equal(partial.ready, '0', 'not final until the full view');
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  assert.equal(await page.getAttribute('#status', 'data-kind'), 'current');
  assert.equal(await page.textContent('#verdict'), partial.verdict, 'the full view has the same verdict');
  assert.doesNotMatch(await page.textContent('#fit'), /Searching/);
  assert.doesNotMatch(await page.textContent('#plan'), /searching/);
  // The engine's own answer without searches names what it left out.
  const quick = nativeRequest({ command: 'view', preset: 'llama-3.1-8b', searches: false, config: { gpu: 'h100-80gb' } });
  assert.deepEqual(quick.pending, ['plan', 'fit', 'suggestions']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('speed: engine time per view, input to every panel redrawn, long tasks, first verdict (recorded, not asserted)', async () => {
  const split = '7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7';
  const configs = {
    '70b': 'preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&zero=1&attention=flash&recompute=selective',
    '405b': `preset=llama-3.1-405b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=16&vpp=2&micro_batches=64&layer_split=${split}&dp=8&zero=1&attention=flash&recompute=selective`,
  };
  const record = { when: new Date().toISOString() };
  const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(0.95 * xs.length))];
  for (const [name, hash] of Object.entries(configs)) {
    const { page } = await open(hash);
    const engine = [], redraw = [], drawing = [], verdict = [], quick = [];
    for (const b of ['2', '1', '2', '1', '2', '1', '2', '1', '2', '1']) {
      await settle(page, () => page.fill('#micro_batch', b));
      engine.push(Number(await page.getAttribute('body', 'data-engine-ms')));
      // The view without its searches, drawn first: its engine time, and input to its verdict.
      const q = await page.getAttribute('body', 'data-quick-ms');
      quick.push(q === null ? null : Number(q));  // null: not asked (the last view was quick)
      verdict.push(Number(await page.getAttribute('body', 'data-verdict-ms')));
      redraw.push(Number(await page.getAttribute('body', 'data-render-ms')));
      drawing.push(Number(await page.getAttribute('body', 'data-draw-ms')));
    }
    // Typing a sequence length digit by digit, select changes, 4,096 micro-batches per step.
    await page.evaluate(() => { window.longTasks = []; });
    await page.fill('#seq', '');
    await settle(page, () => page.type('#seq', '8192', { delay: 30 }));
    await settle(page, () => page.selectOption('#profile', 'pytorch'));
    await settle(page, () => page.selectOption('#attention', 'eager'));
    await settle(page, () => page.fill('#micro_batches', '4096'));
    const big = Number(await page.getAttribute('body', 'data-engine-ms'));
    // Once more at 4,096: the last view was slow, so its verdict comes first (request.js).
    await settle(page, () => page.fill('#micro_batches', '4080'));
    await settle(page, () => page.fill('#micro_batches', '4096'));
    const bigVerdict = Number(await page.getAttribute('body', 'data-verdict-ms'));
    const bigRedraw = Number(await page.getAttribute('body', 'data-render-ms'));
    const long = await page.evaluate(() => window.longTasks);
    record[name] = { engine_ms: engine, engine_ms_4096_micro_batches: big, draw_ms: drawing, input_to_redraw_ms: redraw, input_to_redraw_p95_ms: p95(redraw),
      engine_ms_without_searches: quick, input_to_verdict_ms: verdict, input_to_verdict_p95_ms: p95(verdict),
      input_to_verdict_ms_4096_micro_batches: bigVerdict, input_to_redraw_ms_4096_micro_batches: bigRedraw, long_tasks_ms: long };
    console.log(`# page ${name}: engine per view ${engine.map((x) => x.toFixed(1)).join(', ')} ms (4,096 micro-batches: ${big.toFixed(1)} ms, ` +
      `input to its verdict ${bigVerdict.toFixed(1)} ms, to every panel ${bigRedraw.toFixed(1)} ms); ` +
      `drawing ${drawing.map((x) => x.toFixed(1)).join(', ')} ms; ` +
      `input to every panel p95 ${p95(redraw).toFixed(1)} ms; input to the verdict (searches pending) p95 ${p95(verdict).toFixed(1)} ms, its engine ${quick.map((x) => (x === null ? '-' : x.toFixed(1))).join(', ')} ms; ` +
      `main-thread long tasks: ${long.length ? long.map((x) => x.toFixed(0)).join(', ') + ' ms' : 'none'}`);
    await page.close();
  }
  // Cold loads, navigation start to the verdict's text: the single file and the served page opened
  // without a link (the build's first view, build-pages.mjs), the single file's first paint, and
  // the single file opened by a link (70B: the worker's engine answers it, compiled as it loads).
  const file = pathToFileURL(join(dist, 'actmem.html')).href;
  const loads = { first_verdict_ms_single_file: file, first_verdict_ms_served: `${base}/index.html`,
    first_verdict_ms_single_file_link_70b: `${file}#${configs['70b']}` };
  for (const key of [...Object.keys(loads), 'first_contentful_paint_ms_single_file']) record[key] = [];
  for (let i = 0; i < 3; i++) {
    for (const [key, url] of Object.entries(loads)) {
      const page = await browser.newPage();
      await page.goto(url);
      await page.waitForSelector('body[data-first-verdict-ms]', { timeout: 30000 });
      record[key].push(Number(await page.getAttribute('body', 'data-first-verdict-ms')));
      if (key === 'first_verdict_ms_single_file')
        record.first_contentful_paint_ms_single_file.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0].startTime));
      await page.close();
    }
  }
  const ms = (xs) => xs.map((x) => x.toFixed(0)).join(', ');
  console.log(`# first verdict from a cold load of dist/actmem.html: ${ms(record.first_verdict_ms_single_file)} ms (first paint ` +
    `${ms(record.first_contentful_paint_ms_single_file)} ms); of the served index.html: ${ms(record.first_verdict_ms_served)} ms; ` +
    `of dist/actmem.html by a 70B link: ${ms(record.first_verdict_ms_single_file_link_70b)} ms`);
  await writeFile(join(root, 'build', 'page-speed.json'), JSON.stringify(record, null, 2));
});

// ---- issue 6: the bad-input catalogue and the native = wasm identity grid ----------------------

const catalogue = JSON.parse(await readFile(join(root, 'tests', 'data', 'bad_inputs.json'), 'utf8')).inputs;

test(`bad-input catalogue (${catalogue.length} inputs) through the CLI: exit 2, one line naming the field`, async () => {
  assert.ok(catalogue.length >= 50);
  const dir = join(root, 'build', 'catalogue');
  await mkdir(dir, { recursive: true });
  for (const e of catalogue) {
    const args = ['estimate', ...e.args];
    if (e.model_text !== undefined) {
      const file = join(dir, `${e.id}.json`);
      await writeFile(file, e.model_text);
      args.push('--model', file);
    }
    let status = 0, stderr = '';
    try { execFileSync(cli, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }); } catch (err) { status = err.status; stderr = String(err.stderr); }
    assert.equal(status, 2, e.id);
    assert.equal(stderr.trim(), `actmem: error: ${e.message}`, e.id);
    assert.ok(e.message.startsWith(e.field), `${e.id}: the message names ${e.field}`);
  }
});

test(`bad-input catalogue (${catalogue.length} inputs) through the page: the message beside the field, the previous result kept`, async () => {
  let { page, errors } = await open('preset=gpt2&seq=1024');
  let fresh = 0;
  const verdict = await page.textContent('#verdict');
  // Every control's value as the page wrote it: each bad input overrides a few keys of it, so the
  // previous (good) result is the same one every time.
  const good = await page.evaluate(() => location.hash.slice(1));
  const over = (pairs) => {
    const p = new URLSearchParams(good);
    for (const [k, v] of pairs) p.set(k, v);
    return p.toString();
  };
  for (const e of catalogue) {
    const hash = e.model_text !== undefined ? over([['seq', '16'], ['model', e.model_text]])
      : over([...new URLSearchParams(e.hash)]);
    await page.evaluate((h) => { document.body.dataset.ready = '0'; location.hash = h; }, hash);
    await page.waitForSelector('body[data-ready="1"][data-state="error"]', { timeout: 10000 })
      .catch(async () => assert.fail(`${e.id}: no error shown for #${hash} (state ${await page.getAttribute('body', 'data-state')})`));
    // The slot next to the field's control; model.* messages sit beside the model box.
    const slot = await page.evaluate((f) => {
      const own = document.querySelector(`[data-err="${CSS.escape(f)}"]`);
      return own ? f : f.startsWith('model') ? 'model' : null;
    }, e.field);
    assert.ok(slot, `${e.id}: the page has a place beside ${e.field}`);
    assert.equal((await page.textContent(`[data-err="${slot}"]`)).trim(), e.page_message ?? e.message, e.id);
    assert.equal(await page.textContent('#verdict'), verdict, `${e.id}: the previous result stays`);
    assert.deepEqual(errors, [], e.id);
    // Back to the good configuration on the same page. Keys a link leaves out keep their last
    // value by design, so a bad key that the good link leaves empty (vpp=x, say) would stay: the
    // page writes its whole form into the hash before every request, so the same form gives back
    // exactly `good`. Anything else gets a fresh page, as every input did before (a cold load
    // costs about 3 s here: 70 of them were 225 s of the page stage, 2026-12-02).
    if (await page.evaluate(() => location.hash.slice(1)) !== good)  // else no hashchange would fire
      await settle(page, () => page.evaluate((h) => { location.hash = h; }, good));
    const back = await page.evaluate(() => location.hash.slice(1));
    if (back !== good || await page.getAttribute('body', 'data-state') !== 'ok') {
      await page.close();
      ({ page, errors } = await open(good));
      ++fresh;
    }
    assert.equal(await page.getAttribute('body', 'data-state'), 'ok', `${e.id}: back to the good configuration`);
    assert.equal(await page.textContent('#verdict'), verdict, `${e.id}: back to the good verdict`);
  }
  console.log(`# ${catalogue.length - fresh} of ${catalogue.length} inputs went back to the good form on the same page; ${fresh} needed a fresh one`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('native and wasm give byte-identical answers over every model preset x profile x recompute policy, and every preset\'s view with its searches', async () => {
  const presets = JSON.parse(execFileSync(cli, ['presets', '--json'], { encoding: 'utf8' })).models.map((m) => m.id);
  const requests = [];
  for (const preset of presets)
    for (const profile of ['megatron', 'textbook', 'pytorch', 'hf'])
      for (const recompute of ['none', 'selective', 'full', 'every:2', 'layers:KSCR'])
        requests.push(JSON.stringify({ preset, config: { seq: 2048, profile, recompute, attention: 'eager', gpu: 'h100-80gb' } }));
  // The view with a GPU: its planner, fit and suggestions searches (the planner's front once
  // ordered its ties by each standard library's sort: 2026-12-05).
  for (const preset of presets)
    for (const profile of ['megatron', 'pytorch'])
      requests.push(JSON.stringify({ command: 'view', preset, config: { seq: 4096, profile, attention: 'flash', recompute: 'selective', gpu: 'h100-80gb', dp: 8, zero: 1 } }));
  const file = join(root, 'build', 'identity-requests.jsonl');
  await writeFile(file, requests.join('\n') + '\n');
  const nativeLines = execFileSync(cli, ['requests', file], { encoding: 'utf8', maxBuffer: 1 << 30 }).trimEnd().split('\n');
  const { page } = await open('preset=gpt2');
  const wasmLines = await page.evaluate((reqs) => reqs.map((r) => window.actmem.evaluate(r)), requests);
  assert.equal(nativeLines.length, requests.length);
  let ok = 0;
  for (let i = 0; i < requests.length; ++i) {
    assert.equal(wasmLines[i], nativeLines[i], requests[i]);
    ++ok;
  }
  assert.equal(ok, presets.length * 22);
  await page.close();
});
