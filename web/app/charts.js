// The charts (SVG): the device and tensor bars, the step's timeline op by op, the heatmap of peak
// over micro-batch × sequence with its capacity contour and the largest fit.

// The device bar (allocated, reserved beyond it, each fixed cost, free) against the GPU's
// reported total; the tensor bar (what the peak event holds, part by part) below it.
function drawBar(v) {
  drawStack($('bar'), $('bar-legend'), v.bar, v.bar.capacity_bytes || 0, v.verdict.headroom_bytes);
  drawStack($('tensor-bar'), $('tensor-bar-legend'), v.tensor_bar, 0, 0);
}

function drawStack(svg, legend, bar, cap, headroom) {
  clear(svg);
  const W = width(svg), H = 64;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const segs = bar.segments.filter((s) => s.bytes > 0);
  if (headroom > 0) segs.push({ id: 'headroom', label: 'free', bytes: headroom });
  const scale = Math.max(bar.total_bytes, cap) || 1;
  let x = 0;
  for (const s of segs) {
    const w = (s.bytes / scale) * W;
    svg.appendChild(tip(svgEl('rect', { x, y: 6, width: Math.max(w, 0.5), height: 36, class: s.id }), s.label + ': ' + fmt(s.bytes, 2) + ' (' + exact(s.bytes) + ')'));
    x += w;
  }
  if (cap) {
    const gx = Math.min((cap / scale) * W, W - 1);
    svg.appendChild(svgEl('line', { x1: gx, x2: gx, y1: 0, y2: 48, class: 'gpu-line' }));
    const right = gx > W / 2;
    svg.appendChild(svgEl('text', { x: right ? gx - 4 : gx + 4, y: 60, 'text-anchor': right ? 'end' : 'start' }, 'GPU ' + fmt(cap)));
  }
  clear(legend);
  for (const s of segs) legend.appendChild(tip(el('li', s.label + ' ' + fmt(s.bytes), 'sw-' + s.id), exact(s.bytes) + (s.source ? ' — ' + s.source : '')));
}

// Y ticks at 1, 2 or 5 x 10^k GiB.
function ticks(max) {
  const g = max / GiB;
  const raw = g / 5;
  const p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
  const out = [];
  for (let t = 0; t <= g + 1e-9; t += step) out.push(t * GiB);
  return out;
}

function drawTimeline(v) {
  const tl = v.timeline, svg = $('timeline');
  clear(svg);
  const W = width(svg), H = 240, left = 56, right = 8, top = 22, bottom = 28;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const yMax = tl.y_max * 1.05;
  const X = (i, n) => left + (n > 1 ? i / (n - 1) : 0) * (W - left - right);
  const Y = (b) => H - bottom - (b / yMax) * (H - top - bottom);
  for (const t of ticks(yMax)) {
    svg.appendChild(svgEl('line', { x1: left, x2: W - right, y1: Y(t), y2: Y(t), class: 'grid-line' }));
    svg.appendChild(svgEl('text', { x: left - 6, y: Y(t) + 4, 'text-anchor': 'end' }, (t / GiB).toFixed(t / GiB < 10 && t > 0 && (t / GiB) % 1 ? 1 : 0) + ' GiB'));
  }
  const worst = tl.series[0];
  const n = worst.events;
  const pts = worst.points;
  // Recompute shading, then other stages (faint), then the most loaded stage (bold).
  pts.regenerates.forEach((r, i) => {
    if (!r) return;
    const x0 = X(pts.index[i], n), x1 = i + 1 < pts.index.length ? X(pts.index[i + 1], n) : x0 + 2;
    svg.appendChild(svgEl('rect', { x: x0, y: top, width: Math.max(x1 - x0, 1.5), height: H - top - bottom, class: 'recompute-band' }));
  });
  for (const s of tl.series.slice(1)) {
    const line = pts2(s, X, Y);
    svg.appendChild(tip(svgEl('polyline', { points: line, class: 'live other' }), 'stage ' + s.stage + ': peak ' + fmt(s.peak_bytes) + ' at the ' + s.peak_words));
  }
  const env = [];
  for (let i = 0; i < pts.index.length; i++) env.push(X(pts.index[i], n).toFixed(1) + ',' + Y(pts.live_bytes[i]).toFixed(1));
  for (let i = pts.index.length - 1; i >= 0; i--) env.push(X(pts.index[i], n).toFixed(1) + ',' + Y(pts.low_bytes[i]).toFixed(1));
  svg.appendChild(svgEl('polygon', { points: env.join(' '), class: 'envelope' }));
  svg.appendChild(svgEl('polyline', { points: pts2(worst, X, Y), class: 'live' }));
  if (tl.capacity_bytes !== undefined) {
    svg.appendChild(svgEl('line', { x1: left, x2: W - right, y1: Y(tl.capacity_bytes), y2: Y(tl.capacity_bytes), class: 'gpu-line' }));
    svg.appendChild(svgEl('text', { x: W - right - 4, y: Y(tl.capacity_bytes) - 4, 'text-anchor': 'end', class: 'cap-label' }, 'GPU capacity ' + fmt(tl.capacity_bytes)));
  }
  const pi = worst.peak_point;
  const px = X(pts.index[pi], n), py = Y(pts.live_bytes[pi]);
  svg.appendChild(svgEl('circle', { cx: px, cy: py, r: 5, class: 'peak-dot' }));
  const label = 'peak ' + fmt(worst.peak_bytes) + ': ' + worst.peak_words;
  svg.appendChild(svgEl('text', { x: Math.min(Math.max(px, left + 4), W - right - 4), y: 14, 'text-anchor': px > W / 2 ? 'end' : 'start', class: 'peak-label' }, label));
  svg.appendChild(svgEl('text', { x: left, y: H - 8 }, 'stage ' + worst.stage + ', ' + commas(n) + ' ops of the step in order (each op\'s highest moment) →'));
  // Hover: the nearest point's event in words.
  const hit = svgEl('rect', { x: left, y: top, width: W - left - right, height: H - top - bottom, class: 'hit' });
  hit.addEventListener('mousemove', (ev) => {
    const r = svg.getBoundingClientRect();
    const x = ((ev.clientX - r.left) / r.width) * W;
    let best = 0;
    for (let i = 1; i < pts.index.length; i++) if (Math.abs(X(pts.index[i], n) - x) < Math.abs(X(pts.index[best], n) - x)) best = i;
    showTip(ev, pts.words[best] + ': ' + fmt(pts.live_bytes[best], 2) + ' live (kept activations ' + fmt(pts.activations[best]) +
      ', recomputed ' + fmt(pts.recompute[best]) + ', transients ' + fmt(pts.transients[best]) + ')');
  });
  hit.addEventListener('mouseleave', hideTip);
  svg.appendChild(hit);
  $('timeline-note').textContent = '(' + tl.schedule + ', ' + tl.micro_batches + ' micro-batches' + (tl.stages > 1 ? ', stage ' + worst.stage + ' of ' + tl.stages + ' is the most loaded' : '') +
    ', recompute overhead ' + pct(tl.recompute_overhead_pct) + ')';
  const legend = $('timeline-legend');
  clear(legend);
  legend.appendChild(tip(el('li', 'live memory of stage ' + worst.stage, 'sw-live'), 'the highest moment of each op (bold line); the shaded band reaches down to each op\'s lowest moment'));
  legend.appendChild(tip(el('li', 'backward recomputes here', 'sw-recompute'), 'ops where backward regenerates dropped activations (recompute)'));
  if (tl.capacity_bytes !== undefined) legend.appendChild(el('li', 'GPU capacity', 'sw-capacity'));
  if (tl.series.length > 1) legend.appendChild(el('li', 'other stages', 'sw-other'));
  const sp = $('stage-peaks');
  clear(sp);
  for (const s of tl.series.slice(1)) sp.appendChild(el('span', 'stage ' + s.stage + ': ' + fmt(s.peak_bytes) + ' at the ' + s.peak_words));
}
function pts2(s, X, Y) {
  const p = s.points, out = [];
  for (let i = 0; i < p.index.length; i++) out.push(X(p.index[i], s.events).toFixed(1) + ',' + Y(p.live_bytes[i]).toFixed(1));
  return out.join(' ');
}

// Cell colours: light enough for dark text in both themes (contrast above 4.5:1).
function cellFill(ratio) {
  if (ratio < 0) return 'hsl(210, 10%, 82%)';
  if (ratio <= 1) return 'hsl(' + Math.round(130 - 80 * ratio) + ', 55%, 78%)';
  return 'hsl(0, 70%, ' + Math.round(Math.max(72, 84 - 6 * Math.min(ratio - 1, 2))) + '%)';
}

function drawGrid(v) {
  const g = v.grid, svg = $('heatmap');
  clear(svg);
  const bs = g.micro_batches, ss = g.seqs;
  const W = width(svg), left = 44, top = 4, bottom = 30, ch = 26, H = top + bottom + ch * bs.length, cw = (W - left - 4) / ss.length;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.style.height = H + 'px';
  const cap = g.capacity_bytes;
  const budget = cap || Math.max(1, ...g.peak_bytes.flat());
  const fitsAt = (i, j) => !!(g.fits && g.fits[i][j]);
  g.peak_bytes.forEach((row, i) => {
    svg.appendChild(svgEl('text', { x: left - 6, y: top + i * ch + ch / 2 + 4, 'text-anchor': 'end' }, 'b=' + bs[i]));
    row.forEach((val, j) => {
      const x = left + j * cw, y = top + i * ch;
      svg.appendChild(tip(svgEl('rect', { x: x + 1, y: y + 1, width: cw - 2, height: ch - 2, fill: cellFill(val < 0 ? -1 : val / budget), class: 'cell' }),
        'micro-batch ' + bs[i] + ', sequence ' + commas(ss[j]) + ': ' + (val < 0 ? 'not valid with this layout' : fmt(val, 2) + ' (' + exact(val) + ')' + (g.fits ? (g.fits[i][j] ? ', fits' : ', does not fit') : ''))));
      svg.appendChild(svgEl('text', { x: x + cw / 2, y: y + ch / 2 + 4, 'text-anchor': 'middle', class: 'cell-text' }, val < 0 ? '—' : (val / GiB).toFixed(val / GiB < 100 ? 1 : 0)));
      // The capacity contour: a line between a cell that fits and a neighbour that does not.
      if (cap !== undefined && j + 1 < row.length && fitsAt(i, j) !== fitsAt(i, j + 1)) svg.appendChild(svgEl('line', { x1: x + cw, x2: x + cw, y1: y, y2: y + ch, class: 'contour' }));
      if (cap !== undefined && i + 1 < bs.length && fitsAt(i, j) !== fitsAt(i + 1, j)) svg.appendChild(svgEl('line', { x1: x, x2: x + cw, y1: y + ch, y2: y + ch, class: 'contour' }));
    });
  });
  const [ci, cj] = g.current;
  svg.appendChild(svgEl('rect', { x: left + cj * cw + 1, y: top + ci * ch + 1, width: cw - 2, height: ch - 2, class: 'current-cell' }));
  ss.forEach((s, j) => svg.appendChild(svgEl('text', { x: left + j * cw + cw / 2, y: H - 14, 'text-anchor': 'middle' }, s >= 1024 ? s / 1024 + 'K' : s)));
  svg.appendChild(svgEl('text', { x: left, y: H - 2 }, 'sequence length (tokens); cells: peak GiB per GPU'));
  const legend = $('heatmap-legend');
  clear(legend);
  legend.appendChild(el('li', cap !== undefined ? 'fits (green → yellow near the capacity)' : 'peak (green → yellow: lower → higher)', 'sw-fits'));
  if (cap !== undefined) legend.appendChild(el('li', 'does not fit', 'sw-nofit'));
  if (cap !== undefined) legend.appendChild(el('li', 'capacity contour', 'sw-contour'));
  legend.appendChild(el('li', 'current setting', 'sw-current'));
  legend.appendChild(el('li', 'not valid (—)', 'sw-invalid'));
  const fit = $('fit');
  if (pending(v, 'fit')) { fit.textContent = 'Searching for the largest micro-batch and sequence that fit…'; fit.dataset.maxMicroBatch = ''; }
  else if (!v.fit) { fit.textContent = 'Choose a GPU to see the largest micro-batch and sequence that fit.'; fit.dataset.maxMicroBatch = ''; }
  else if (!v.fit.ok) { fit.textContent = v.fit.message; fit.dataset.maxMicroBatch = ''; }
  else {
    fit.textContent = 'Largest micro-batch that fits: ' + v.fit.max_micro_batch + (v.fit.max_micro_batch === 0 ? ' (not even one)' : '') +
      '; largest sequence at micro-batch ' + v.layout.micro_batch + ': ' + (v.fit.max_seq ? commas(v.fit.max_seq) : 'none') + '.';
    fit.dataset.maxMicroBatch = String(v.fit.max_micro_batch);
  }
}
