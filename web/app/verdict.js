// The verdict: fits or not, in words; the changes that would make it fit (one click each); the
// exact bytes under "Exact bytes"; the embed's one-line summary.

function layoutText(l) {
  return 'tp ' + l.tp + (l.sp ? ' (SP)' : '') + ' × pp ' + l.pp + (l.vpp > 1 ? ' (vpp ' + l.vpp + ')' : '') + ' × cp ' + l.cp + ' × dp ' + l.dp;
}

function suggestionText(s, v) {
  const c = s.change;
  const parts = [];
  if (c.dp !== undefined) parts.push(s.gpus + ' GPUs (dp ' + c.dp + ')');
  if (c.zero !== undefined) parts.push('ZeRO stage ' + c.zero);
  if (c.micro_batch !== undefined) parts.push('micro-batch ' + c.micro_batch);
  if (c.recompute !== undefined) parts.push('recompute ' + c.recompute + (s.recompute_overhead_pct > 0 ? ' (+' + pct(s.recompute_overhead_pct) + ' FLOPs)' : ''));
  if (c.offload) parts.push('offload kept activations to host');
  return parts.join(' + ') + ': peak ' + fmt(s.peak_bytes) + (s.fits ? ', fits' : '');
}

// The phase of the tensor peak, its largest lines and how far below it every other phase peaks
// (the engine's peak.phase, peak.top and phases; issue 36).
function phaseText(est) {
  const p = est.peak, phases = est.phases || [];
  const at = phases.find((x) => x.phase === p.phase);
  if (!at) return '';
  const others = phases.filter((x) => x.phase !== p.phase).map((x) => x.label + ' ' + fmt(x.below_peak_bytes) + ' below');
  return ' The tensor peak falls in the ' + at.label + '; its largest parts: ' + p.top.map((t) => t.label + ' ' + fmt(t.bytes)).join(', ') + '.' +
    (others.length ? ' Each other phase peaks lower: ' + others.join(', ') + '.' : '');
}

function drawVerdict(v) {
  const d = v.verdict, l = v.layout, verdict = $('verdict');
  const gpus = d.gpus + (d.gpus === 1 ? ' GPU' : ' GPUs');
  // The verdict is on the device's figure (the engine's): what the driver would count as used
  // at the step's fullest, against the total it reports.
  if (d.capacity_bytes !== undefined) {
    const gap = Math.abs(d.headroom_bytes);
    verdict.textContent = d.fits
      ? 'Fits: ' + fmt(d.total_bytes) + ' of ' + fmt(d.capacity_bytes) + ' per GPU, ' + fmt(gap) + ' to spare, on ' + gpus + '.'
      : d.headroom_bytes >= 0
        ? 'Does not fit: the allocator runs out of room (fragmentation) although ' + fmt(d.total_bytes) + ' is below the ' + fmt(d.capacity_bytes) + ' of each of ' + gpus + '.'
        : 'Does not fit: needs ' + fmt(d.total_bytes) + ' per GPU, ' + fmt(gap) + ' more than the ' + fmt(d.capacity_bytes) + ' of each of ' + gpus + '.';
    verdict.className = 'fade verdict ' + (d.fits ? 'ok' : 'bad');
  } else {
    verdict.textContent = 'Peak ' + fmt(d.total_bytes) + ' per GPU on ' + gpus + ' as the driver counts it (choose a GPU to check the fit).';
    verdict.className = 'fade verdict';
  }
  verdict.dataset.peak = String(d.peak_bytes);
  verdict.dataset.total = String(d.total_bytes);
  tip(verdict, 'on the device ' + exact(d.total_bytes) + (d.capacity_bytes !== undefined ? ' of ' + exact(d.capacity_bytes) : '') + '; tensors peak at ' + exact(d.peak_bytes));
  const fit = v.fit && v.fit.ok ? v.fit : null;
  $('verdict-detail').textContent = 'Tensors peak at ' + fmt(d.peak_bytes) + ' at the ' + d.peak_words + (d.stages > 1 ? ' on pipeline stage ' + d.stage + ' of ' + d.stages : '') +
    '; through PyTorch\'s caching allocator ' + fmt(d.allocated_bytes) + ' allocated, ' + fmt(d.reserved_bytes) + ' reserved, plus the fixed costs (CUDA context, NCCL)' +
    '. Layout ' + layoutText(l) + ' = ' + gpus + '; sequence ' + commas(l.seq) + ', micro-batch ' + l.micro_batch + ', ' + l.micro_batches +
    (l.micro_batches === 1 ? ' micro-batch per step, ' : ' micro-batches per step, ') + l.schedule + ', recompute ' + l.recompute + '.' +
    (fit && d.fits ? ' Largest micro-batch that fits: ' + fit.max_micro_batch + '.' : '') + phaseText(v.estimate);
  $('embed-summary').textContent = v.model.name + ' · sequence ' + commas(l.seq) + ' · micro-batch ' + l.micro_batch + ' · ' + layoutText(l) + ' · ' + (d.gpu || 'no GPU chosen');
  const list = $('suggestions');
  clear(list);
  for (const s of v.suggestions) {
    const li = el('li');
    const b = el('button', suggestionText(s, v), 'fix');
    b.type = 'button';
    b.dataset.change = JSON.stringify(s.change);
    b.addEventListener('click', () => applyChange(s.change));
    li.appendChild(b);
    list.appendChild(li);
  }
  $('fixes').hidden = v.suggestions.length === 0 && !(d.capacity_bytes !== undefined && !d.fits);
  if (!d.fits && d.capacity_bytes !== undefined && pending(v, 'suggestions')) list.appendChild(el('li', 'Searching for the smallest changes that fit…', 'pending'));
  else if (!d.fits && d.capacity_bytes !== undefined && v.suggestions.length === 0) list.appendChild(el('li', 'No change of micro-batch, ZeRO stage, recompute or data-parallel GPUs (up to 1,024) fits; try tensor or pipeline parallelism.'));
  const dl = $('summary');
  clear(dl);
  const p = v.estimate.peak;
  const rows = [
    ['model', v.model.name + ' (' + commas(v.model.params) + ' parameters)'],
    ['peak (what must fit)', exact(p.bytes) + ' at ' + p.at + ', stage ' + p.stage],
    ['static', exact(p.static_bytes)],
    ['kept activations', exact(p.kept_activations_bytes)],
    ['recomputed', exact(p.recomputed_bytes)],
    ['transients', exact(p.transient_bytes)],
    ['per layer', exact(v.estimate.per_layer.activation_bytes)],
    ['recompute overhead', pct(v.estimate.recompute_overhead_pct)],
  ];
  if (p.fragmentation_bytes > 0) rows.splice(6, 0, ['fragmentation allowance', exact(p.fragmentation_bytes)]);
  for (const ph of v.estimate.phases || []) rows.push(['peak in ' + ph.label, exact(ph.peak_bytes) + ' at ' + ph.at + (ph.phase === p.phase ? ' (the peak)' : '')]);
  rows.splice(1, 0, ['on the device (nvidia-smi)', exact(d.total_bytes)], ['allocated (allocator)', exact(d.allocated_bytes)], ['reserved (allocator)', exact(d.reserved_bytes)]);
  if (d.capacity_bytes !== undefined) rows.push(['headroom', commas(d.headroom_bytes) + ' bytes']);
  for (const n of d.notes || []) rows.push(['note', n]);
  for (const [k, val] of rows) { dl.appendChild(el('dt', k)); const dd = el('dd', val); dd.dataset.key = k; dl.appendChild(dd); }
}
