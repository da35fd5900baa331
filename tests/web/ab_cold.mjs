// The cold first verdict of two single-file builds, loaded alternately in Debian's Chromium (not
// a test; docs/performance.md records what it measured): node ab_cold.mjs A.html B.html [N]
// prints each load's navigation-to-verdict time and the medians. Run from tests/web (it uses the
// playwright-core that npm ci installs there).
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
const [a, b, n] = [process.argv[2], process.argv[3], Number(process.argv[4] || 7)];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
const res = { A: [], B: [] };
for (let i = 0; i < n; i++) {
  for (const [k, f] of [['A', a], ['B', b]]) {
    const page = await browser.newPage();
    await page.goto(pathToFileURL(f).href);
    await page.waitForSelector('body[data-first-verdict-ms]', { timeout: 30000 });
    res[k].push(Number(await page.getAttribute('body', 'data-first-verdict-ms')));
    await page.close();
  }
}
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
console.log(JSON.stringify({ A: res.A.map(Math.round), B: res.B.map(Math.round), medianA: med(res.A), medianB: med(res.B) }));
await browser.close();
