// What embedding pages rely on (docs/embedding.md): the link to the full calculator, the height
// posted to the parent frame, the theme button, and window.actmem (the engine on the page).

// The same state without embed=1: the link from the embed to the full calculator.
function fullHash(p) {
  const q = new URLSearchParams(p);
  q.delete('embed');
  return q.toString();
}

function postHeight() {
  if (window.parent !== window) window.parent.postMessage({ type: 'actmem:height', height: document.documentElement.scrollHeight }, '*');
}

// The embedding API (docs/embedding.md): a synchronous evaluate on the page itself, loaded once
// the first answer is drawn so it never delays it.
function loadMainEngine() {
  state.mainEngineLoading = true;
  // Single file: the engine's wasm is the page's gzip-compressed copy (web/wasm-gz.js).
  const gz = $('wasm-gz');
  createActmem(gz ? actmemWasmFromGz(gz.textContent.trim(), () => ready()) : {}).then((M) => {
    window.actmem = Object.freeze({ evaluate: (request) => M.evaluate(String(request)) });
    ready();
  }).catch(() => ready());
}

function wireEmbed() {
  $('theme-toggle').addEventListener('click', () => {
    const dark = document.documentElement.dataset.theme === 'dark' ||
      (!document.documentElement.dataset.theme && matchMedia('(prefers-color-scheme: dark)').matches);
    document.documentElement.dataset.theme = dark ? 'light' : 'dark';
    const p = new URLSearchParams(location.hash.slice(1));
    p.set('theme', document.documentElement.dataset.theme);
    history.replaceState(null, '', '#' + p.toString());
  });
  if (window.ResizeObserver) new ResizeObserver(postHeight).observe(document.documentElement);
}
