// Single-file page only (build-pages.mjs appends this to the engine's script): the engine's wasm
// travels in the page gzip-compressed, as base64 (about a third of the raw wasm's base64, which
// the HTML parser and the worker's script compiler both read through), and is decompressed and
// compiled as one stream: DecompressionStream into WebAssembly.instantiateStreaming.
// actmemWasmFromGz(base64, onFail) returns createActmem options (Emscripten's instantiateWasm).
function actmemWasmFromGz(base64, onFail) {
  return {
    instantiateWasm(imports, receiveInstance) {
      // Emscripten 3.1.6 only logs a throw from here (its ready promise never settles): every
      // failure goes to onFail (a browser without DecompressionStream throws at once).
      try {
        const bytes = typeof Uint8Array.fromBase64 === 'function'
          ? Uint8Array.fromBase64(base64)
          : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
        const wasm = new Response(stream, { headers: { 'Content-Type': 'application/wasm' } });
        WebAssembly.instantiateStreaming(wasm, imports)
          .then((r) => receiveInstance(r.instance, r.module))
          .catch((e) => onFail(e));
      } catch (e) {
        onFail(e);
      }
      return {};  // Emscripten: the instance arrives through receiveInstance
    },
  };
}
