// Small DOM helpers (elements, SVG elements, a node's hover text) and the page's one tooltip.

// ---- small DOM helpers ------------------------------------------------------------------
const $ = (id) => document.getElementById(id);
const SVGNS = 'http://www.w3.org/2000/svg';
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
// A chart's width in CSS pixels. draw() measures its charts before it writes anything
// (measureWidths): a width read after the draw's first writes forced a layout of the page, three
// per draw (6-23 ms of a 405B change, 2026-12-05, a Chromium trace).
const measuredWidth = (svg) => Math.max(280, Math.round(svg.getBoundingClientRect().width) || 600);
let drawWidths = null;
function measureWidths(svgs) { drawWidths = new Map(svgs.map((svg) => [svg, measuredWidth(svg)])); }
function forgetWidths() { drawWidths = null; }
const width = (svg) => (drawWidths && drawWidths.get(svg)) || measuredWidth(svg);
// Writes that would change nothing are skipped: text set again, even unchanged, replaced the
// node's text and laid it out again (225 text nodes a change from the option and form defaults
// alone, 2026-12-05, a Chromium trace with invalidation tracking).
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
function setData(node, key, value) { if (node.dataset[key] !== value) node.dataset[key] = value; }
const tip = (node, text) => { setData(node, 'tip', text); return node; };

// ---- one tooltip for every [data-tip] -----------------------------------------------------
function showTip(ev, text) {
  const t = $('tooltip');
  t.textContent = text;
  t.hidden = false;
  t.style.left = Math.min(ev.clientX + 12, window.innerWidth - 330) + 'px';
  t.style.top = ev.clientY + 14 + 'px';
}
function hideTip() { $('tooltip').hidden = true; }
document.addEventListener('mouseover', (ev) => {
  const n = ev.target.closest && ev.target.closest('[data-tip]');
  if (n) showTip(ev, n.dataset.tip); else if (!(ev.target.classList && ev.target.classList.contains('hit'))) hideTip();
});
document.addEventListener('focusin', (ev) => {
  const n = ev.target.closest && ev.target.closest('[data-tip]');
  if (n) { const r = n.getBoundingClientRect(); showTip({ clientX: r.left, clientY: r.bottom }, n.dataset.tip); }
});
