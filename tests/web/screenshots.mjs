// Regenerates the page screenshots in docs/images/ (README, user guide) from the built dist/:
// the first view, the 70B answer, an error, the embed and 360 px. Run by hand after changing the
// page: node tests/web/screenshots.mjs (needs dist/ from scripts/run.sh and Debian's Chromium).
import { createServer } from 'node:http';
import { readFile, mkdir } from 'node:fs/promises';
import { join, extname, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'dist');
const out = join(root, 'docs', 'images');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/docs-page.html') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><body style="font-family:sans-serif;max-width:760px;margin:16px auto"><h3>Your documentation page</h3>
      <p>An embedded calculator, sized to its content:</p><iframe id="f" src="/index.html#preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&zero=1&attention=flash&recompute=selective&embed=1&theme=light" width="100%" height="200" style="border:1px solid #ccc"></iframe>
      <script>addEventListener('message',e=>{if(e.data&&e.data.type==='actmem:height')document.getElementById('f').height=e.data.height;});</script></body>`);
    return;
  }
  try {
    const body = await readFile(join(dist, path));
    res.writeHead(200, { 'content-type': types[extname(path)] || 'application/octet-stream' });
    res.end(body);
  } catch { res.writeHead(404); res.end(); }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'] });
await mkdir(out, { recursive: true });

async function shot(name, url, viewport, act) {
  const page = await browser.newPage({ viewport });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 }).catch(() => {});
  if (act) await act(page);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(out, name) });
  await page.close();
  console.log('wrote docs/images/' + name);
}

const h70 = 'preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&zero=1&attention=flash&recompute=selective&theme=light';
await shot('first-view.png', `${base}/index.html#theme=light`, { width: 1280, height: 900 });
await shot('llama-70b.png', `${base}/index.html#${h70}`, { width: 1280, height: 900 });
await shot('error.png', `${base}/index.html#${h70}`, { width: 1280, height: 900 }, async (page) => {
  await page.evaluate(() => { document.body.dataset.ready = '0'; });
  await page.fill('#tp', '3');
  await page.waitForSelector('body[data-ready="1"]');
});
await shot('does-not-fit.png', `${base}/index.html#preset=llama-3.1-70b&gpu=h100-80gb&seq=8192&tp=8&sp=1&pp=4&dp=2&attention=flash&recompute=none&micro_batch=4&theme=light`, { width: 1280, height: 900 });
await shot('narrow-360.png', `${base}/index.html#${h70}`, { width: 360, height: 900 });
// A torchtitan float8 run (the options open, each empty control naming torchtitan's default).
await shot('torchtitan-float8.png', `${base}/index.html#preset=llama-3.1-8b&gpu=h100-80gb&seq=8192&micro_batch=2&dp=8&framework=torchtitan&float8=tensorwise&float8_all_gather=true&theme=light`,
  { width: 1280, height: 1400 }, async (page) => { await page.evaluate(() => { document.getElementById('options').open = true; }); });
// A pasted Megatron-LM argument list, in use.
await shot('megatron-args.png', `${base}/index.html#preset=llama-3.1-8b&gpu=h100-80gb&theme=light`, { width: 1280, height: 1100 }, async (page) => {
  await page.click('#launch summary');
  await page.fill('#launch-text', '--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 2 --seq-length 4096 --bf16 --use-distributed-optimizer --recompute-activations');
  await page.evaluate(() => { document.body.dataset.ready = '0'; });
  await page.click('#use-launch');
  await page.waitForSelector('body[data-ready="1"]');
});
// The advisor: 64 GPUs for Llama 3.1 70B, ranked layouts.
await shot('advisor.png', `${base}/index.html#${h70}`, { width: 1280, height: 1400 }, async (page) => {
  await page.fill('#advise-gpus', '64');
  await page.fill('#advise-batch', '128');
  await page.click('#advise-run');
  await page.waitForSelector('#advise-panel[data-state="ok"]', { timeout: 60000 });
  await page.evaluate(() => document.getElementById('advise-panel').scrollIntoView());
});
{
  const page = await browser.newPage({ viewport: { width: 800, height: 560 } });
  await page.goto(`${base}/docs-page.html`);
  const frame = await (await page.waitForSelector('#f')).contentFrame();
  await frame.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, 'embed.png') });
  await page.close();
  console.log('wrote docs/images/embed.png');
}
await browser.close();
server.close();
