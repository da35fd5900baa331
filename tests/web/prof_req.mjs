import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage();
await page.addInitScript(() => { window.__posted = []; const p = Worker.prototype.postMessage; Worker.prototype.postMessage = function (m, ...r) { if (m && m.request) window.__posted.push(m); return p.call(this, m, ...r); }; });
await page.goto(pathToFileURL(process.argv[2]).href);
await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
console.log(JSON.stringify(await page.evaluate(() => window.__posted)));
await browser.close();
