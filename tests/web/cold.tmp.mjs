import { chromium } from 'playwright-core';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'] });
for (let i = 0; i < 5; i++) {
  const page = await browser.newPage();
  await page.goto(pathToFileURL(join(root, 'dist', 'actmem.html')).href);
  await page.waitForSelector('body[data-first-verdict-ms]', { timeout: 30000 });
  const d = await page.evaluate(() => ({ first: document.body.dataset.firstVerdictMs, engine: document.body.dataset.engineMs, dcl: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd, marks: performance.getEntriesByType('mark').map(m => m.name + '@' + m.startTime.toFixed(0)) }));
  console.log(JSON.stringify(d));
  await page.close();
}
await browser.close();
