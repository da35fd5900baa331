// Builds the page's two HTML files from web/index.html:
// - dist/index.html, the served site's page: index.html with the first view (below).
// - dist/actmem.html, one self-contained file (works from file://): the same page with app.js and
//   style.css inlined, and in the head, before the markup: the engine's module with wasm-gz.js,
//   worker.js as inert text, start.js (which starts the engine's Web Worker from a Blob of those
//   two texts while the rest of the page is parsed: file:// pages cannot load a worker by path), the
//   engine's wasm gzip-compressed as base64 (inert text) and the one line that posts it to the
//   worker. A Content-Security-Policy allows exactly the inline scripts by their SHA-256.
// The first view: web/first-request.json is the request the page makes first when opened without a
// link; this script asks the engine (dist/actmem.js and actmem.wasm, the very build both pages load)
// that request and puts the request and the answer in the page as inert JSON (the "first-view"
// block), which request.js draws at once instead of waiting for the worker's engine to compile
// (docs/performance.md, the cold first verdict). A page test checks the page's first request is
// this one and the answer is the native CLI's, byte for byte.
//   node build-pages.mjs <web> <dist>
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const [webDir, distDir] = process.argv.slice(2);
const read = (f) => readFileSync(f, 'utf8');
const html = read(join(webDir, 'index.html'));

// The engine's answer to the page's first request, from the module both pages load.
async function firstView() {
  const createActmem = createRequire(import.meta.url)(join(distDir, 'actmem.js'));
  const engine = await createActmem({ wasmBinary: readFileSync(join(distDir, 'actmem.wasm')) });
  const requestText = read(join(webDir, 'first-request.json')).trim();
  const answerText = engine.evaluate(requestText);
  const answer = JSON.parse(answerText);
  if (!answer.ok) throw new Error(`build-pages: the engine refuses web/first-request.json: ${JSON.stringify(answer.error)}`);
  // Both texts as they are (the page parses the block as it parses the worker's answers). '<' only
  // occurs inside JSON strings, where \u003c is the same character: no "</script" ends the block.
  const text = `{"request":${requestText},"answer":${answerText}}`.replace(/</g, '\\u003c');
  return `<script id="first-view" type="application/json">${text}</script>\n`;
}

function replaceOnce(text, tag, by) {
  if (!text.includes(tag)) throw new Error(`build-pages: index.html no longer has ${tag.trim()}`);
  return text.replace(tag, () => by);
}

const appTag = '<script src="app.js"></script>';
const first = await firstView();
const served = replaceOnce(html, appTag, first + appTag);
writeFileSync(join(distDir, 'index.html'), served);

const app = read(join(distDir, 'app.js'));
const worker = read(join(webDir, 'worker.js'));
const start = read(join(webDir, 'start.js'));
const css = read(join(webDir, 'style.css'));
const mod = read(join(distDir, 'actmem.js')) + '\n' + read(join(webDir, 'wasm-gz.js'));
// mtime 0 and level 9: the same wasm gives the same page, byte for byte, with the same Node (its
// zlib's output may differ between versions).
const wasmGz = gzipSync(readFileSync(join(distDir, 'actmem.wasm')), { level: 9 }).toString('base64');
const sendWasm = 'actmemStart.sendWasm();';
for (const [name, text] of [['module', mod], ['app.js', app], ['worker.js', worker], ['start.js', start]])
  if (text.includes('</script')) throw new Error(`build-pages: ${name} contains </script and cannot be inlined`);
const hash = (s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
const csp = `default-src 'none'; script-src ${hash(mod)} ${hash(start)} ${hash(sendWasm)} ${hash(app)} 'wasm-unsafe-eval'; ` +
  `style-src ${hash(css)}; img-src data:; worker-src blob:; base-uri 'none'; form-action 'none'`;
const head = `<script id="engine-src">${mod}</script>\n<script id="worker-src" type="text/plain">${worker}</script>\n` +
  `<script>${start}</script>\n<script id="wasm-gz" type="application/octet-stream">${wasmGz}</script>\n` +
  `<script>${sendWasm}</script>`;
let single = served.replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, `<meta http-equiv="Content-Security-Policy" content="${csp}">`);
single = replaceOnce(single, '<link rel="stylesheet" href="style.css">', `<style>${css}</style>`);
single = replaceOnce(single, '<script src="start.js"></script>', head);
single = replaceOnce(single, '<script id="engine-src" src="actmem.js"></script>\n', '');
single = replaceOnce(single, appTag, `<script>${app}</script>`);
writeFileSync(join(distDir, 'actmem.html'), single);
console.log(`wrote ${join(distDir, 'index.html')} (${served.length} bytes) and ${join(distDir, 'actmem.html')} ` +
  `(${single.length} bytes; the wasm ${wasmGz.length} bytes of gzip base64)`);
