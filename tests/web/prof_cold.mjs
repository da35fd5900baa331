import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import { writeFileSync } from 'node:fs';
const f = process.argv[2], n = Number(process.argv[3] || 5), trace = process.argv[4];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
for (let i = 0; i < n; i++) {
  const page = await browser.newPage();
  if (trace && i === n - 1) await browser.startTracing(page, { path: trace, categories: ['devtools.timeline', 'v8', 'v8.wasm', 'disabled-by-default-devtools.timeline', 'blink', 'loading'] });
  await page.goto(pathToFileURL(f).href + (process.argv[5] || ""));
  await page.waitForSelector('body[data-first-verdict-ms]', { timeout: 30000 });
  if (trace && i === n - 1) await browser.stopTracing();
  const r = await page.evaluate(() => { const n = performance.getEntriesByType('navigation')[0]; return { resp: n.responseEnd, di: n.domInteractive, dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, fv: Number(document.body.dataset.firstVerdictMs), eng: document.body.dataset.engineMs, q: document.body.dataset.quickMs, marks: performance.getEntriesByType('mark').map(m => [m.name, Math.round(m.startTime)]) }; });
  console.log(JSON.stringify(r));
  await page.close();
}
await browser.close();
