// Formatting: sizes in binary units (exact bytes one hover away), thousands, percentages, sentences.

const GiB = 1073741824;
function fmt(b, digits) {
  if (b === undefined || b === null || b < 0) return '—';
  const d = digits === undefined ? 1 : digits;
  if (b >= GiB) return (b / GiB).toFixed(d) + ' GiB';
  if (b >= 1048576) return (b / 1048576).toFixed(d) + ' MiB';
  if (b >= 1024) return (b / 1024).toFixed(d) + ' KiB';
  return b + ' B';
}
const commas = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
const exact = (b) => commas(b) + ' bytes';
const pct = (x) => (Math.round(x * 10) / 10).toFixed(1) + '%';
const sentence = (m) => (/[.!?]$/.test(m) ? m : m + '.');
