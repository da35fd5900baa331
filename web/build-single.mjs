// Builds dist/actmem.html: index.html with the wasm-embedded module, app.js and style.css inlined,
// and a Content-Security-Policy that allows exactly those inline blocks by their SHA-256.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [webDir, moduleJs, outFile] = process.argv.slice(2);
const html = readFileSync(join(webDir, 'index.html'), 'utf8');
const app = readFileSync(join(webDir, 'app.js'), 'utf8');
const css = readFileSync(join(webDir, 'style.css'), 'utf8');
const mod = readFileSync(moduleJs, 'utf8');
const hash = (s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
const csp = `default-src 'none'; script-src ${hash(mod)} ${hash(app)} 'wasm-unsafe-eval'; ` +
  `style-src ${hash(css)}; img-src data:; base-uri 'none'; form-action 'none'`;
let out = html
  .replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, `<meta http-equiv="Content-Security-Policy" content="${csp}">`)
  .replace('<link rel="stylesheet" href="style.css">', () => `<style>${css}</style>`)
  .replace('<script src="actmem.js"></script>', () => `<script>${mod}</script>`)
  .replace('<script src="app.js"></script>', () => `<script>${app}</script>`);
if (out.includes('src="actmem.js"') || out.includes('src="app.js"') || out.includes('href="style.css"'))
  throw new Error('build-single: index.html no longer has the expected script/style tags');
writeFileSync(outFile, out);
console.log(`wrote ${outFile} (${out.length} bytes)`);
