// Builds dist/actmem.html: index.html with the wasm-embedded module, the page's script (dist/app.js,
// which build-app.mjs joins from web/app/) and style.css inlined, the worker's source carried as
// inert text (the page starts the engine's Web Worker from a Blob of the module and worker texts:
// file:// pages cannot load a worker by path), and a Content-Security-Policy that allows exactly
// the inline blocks by their SHA-256.
//   node build-single.mjs <web> <app.js> <module.js> <out.html>
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [webDir, appJs, moduleJs, outFile] = process.argv.slice(2);
const html = readFileSync(join(webDir, 'index.html'), 'utf8');
const app = readFileSync(appJs, 'utf8');
const worker = readFileSync(join(webDir, 'worker.js'), 'utf8');
const css = readFileSync(join(webDir, 'style.css'), 'utf8');
const mod = readFileSync(moduleJs, 'utf8');
for (const [name, text] of [['module', mod], ['app.js', app], ['worker.js', worker]])
  if (text.includes('</script')) throw new Error(`build-single: ${name} contains </script and cannot be inlined`);
const hash = (s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
// connect-src data: lets the module read its embedded wasm (a data: URI) without a CSP report.
const csp = `default-src 'none'; script-src ${hash(mod)} ${hash(app)} 'wasm-unsafe-eval'; ` +
  `style-src ${hash(css)}; img-src data:; connect-src data:; worker-src blob:; base-uri 'none'; form-action 'none'`;
let out = html
  .replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, `<meta http-equiv="Content-Security-Policy" content="${csp}">`)
  .replace('<link rel="stylesheet" href="style.css">', () => `<style>${css}</style>`)
  .replace('<script id="engine-src" src="actmem.js"></script>', () => `<script id="engine-src">${mod}</script>\n<script id="worker-src" type="text/plain">${worker}</script>`)
  .replace('<script src="app.js"></script>', () => `<script>${app}</script>`);
if (out.includes('src="actmem.js"') || out.includes('src="app.js"') || out.includes('href="style.css"'))
  throw new Error('build-single: index.html no longer has the expected script/style tags');
writeFileSync(outFile, out);
console.log(`wrote ${outFile} (${out.length} bytes)`);
