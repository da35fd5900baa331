import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
const f = process.argv[2], n = Number(process.argv[3] || 5);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
for (let i = 0; i < n; i++) {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  await page.goto(pathToFileURL(f).href);
  await page.waitForSelector('body[data-first-verdict-ms]', { timeout: 30000 });
  const r = await page.evaluate(() => { const n = performance.getEntriesByType('navigation')[0]; return { origin: performance.timeOrigin, di: Math.round(n.domInteractive), fv: Number(document.body.dataset.firstVerdictMs), q: document.body.dataset.quickMs }; });
  const w = logs.filter((l) => /^(READY|MSG|DONE|TOP|POSTED|SENT)/.test(l)).map((l) => { const p = l.split(' '); return p.slice(0, -1).join(' ') + '@' + Math.round(Number(p[p.length - 1]) - r.origin); });
  console.log(JSON.stringify({ di: r.di, fv: r.fv, q: r.q, w }));
  await page.close();
}
await browser.close();
