// Builds dist/app.js, the page's script, from the files of web/app/: joined in ORDER inside one
// function (strict mode), so they share their top-level names as the sections of one script did,
// and nothing reaches window but what the page sets itself (window.actmem, actmemTimings,
// actmemRequests; main.js takes and deletes start.js's window.actmemStart). No bundler and no
// module loader: the served page loads the result as app.js, and build-pages.mjs inlines the same
// text into dist/actmem.html (allowed there by its SHA-256), which also opens from file://.
//   node build-app.mjs <web/app> <out.js>
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Script } from 'node:vm';

// The order. Only three files run anything as the script loads: state.js (the state object, the
// window counters) comes first, dom.js registers the tooltip's document listeners, and main.js
// comes last (it starts the worker, whose answers call into every other file). The others only
// declare functions and constants, in the order of the page's sections.
export const ORDER = ['state.js', 'dom.js', 'format.js', 'controls.js', 'form.js', 'request.js', 'view.js', 'verdict.js',
  'charts.js', 'tables.js', 'planner.js', 'rl.js', 'compare.js', 'exports.js', 'embed.js', 'main.js'];

const HEADER = `// actmem page: reads the form, asks the engine (in a Web Worker) for the view of the current
// inputs, and draws the answer. Every number, choice and suggestion comes from the engine's view
// answer (docs/schema.md, "The view answer"); this script formats and draws. Nothing from the URL or
// a pasted file is ever inserted as HTML (textContent and setAttribute only).
// Built by web/build-app.mjs from web/app/ (edit those files, not this one), in this order:
${ORDER.join(', ').match(/.{1,96}(, |$)/g).map((line) => '// ' + line.trimEnd()).join('\n')}
'use strict';
`;

// Top-level declarations (the files are not indented at their top level). Two files declaring
// one name would be a syntax error for const/let but a silent override for functions: both fail
// here.
const DECLARATION = /^(?:async\s+)?(?:function\s*\*?\s*|const\s+|let\s+|var\s+|class\s+)([A-Za-z_$][\w$]*)/gm;

// The script's text: every file of appDir, in ORDER, one function scope around them all.
export function buildApp(appDir) {
  const present = readdirSync(appDir).filter((f) => f.endsWith('.js')).sort();
  const missing = ORDER.filter((f) => !present.includes(f));
  const unlisted = present.filter((f) => !ORDER.includes(f));
  if (missing.length) throw new Error(`build-app: ${missing.join(', ')} listed in ORDER but not in ${appDir}`);
  if (unlisted.length) throw new Error(`build-app: ${unlisted.join(', ')} in ${appDir} but not in ORDER (web/build-app.mjs)`);
  const declaredIn = new Map();
  const parts = ORDER.map((f) => {
    const text = readFileSync(join(appDir, f), 'utf8');
    if (!text.endsWith('\n')) throw new Error(`build-app: ${f} does not end with a newline`);
    for (const [, name] of text.matchAll(DECLARATION)) {
      if (declaredIn.has(name)) throw new Error(`build-app: ${name} is declared in both ${declaredIn.get(name)} and ${f}`);
      declaredIn.set(name, f);
    }
    return `// ---- web/app/${f} ----\n${text}`;
  });
  // The engine's presets answer as of the build (web/presets.json: the page's own request
  // {"command": "presets"} answered by `actmem requests`; a native test keeps it current): main.js
  // fills the form from it while the engine compiles, so the first view is asked at once instead
  // of after a presets round trip (docs/performance.md, the cold first verdict).
  const presetsFile = join(appDir, '..', 'presets.json');
  const presets = existsSync(presetsFile) ? readFileSync(presetsFile, 'utf8').trim() : 'null';
  JSON.parse(presets);  // a broken file fails the build
  parts.unshift(`// ---- web/presets.json ----\nconst PRESETS_AT_BUILD = ${presets};\n`);
  return `${HEADER}\n(function () {\n${parts.join('\n')}})();\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [appDir, outFile] = process.argv.slice(2);
  if (!appDir || !outFile) throw new Error('usage: node build-app.mjs <web/app> <out.js>');
  const app = buildApp(appDir);
  new Script(app, { filename: outFile });  // compiles, runs nothing: a syntax error fails the build, not the page
  writeFileSync(outFile, app);
  console.log(`wrote ${outFile} (${ORDER.length} files, ${app.length} bytes)`);
}
