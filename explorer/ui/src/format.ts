// Numbers as people read them: durations in the unit that fits, bytes, rates, percents.

export function formatDuration(ns: number): string {
  const a = Math.abs(ns);
  if (a < 1e3) return `${trim(ns)} ns`;
  if (a < 1e6) return `${trim(ns / 1e3)} µs`;
  if (a < 1e9) return `${trim(ns / 1e6)} ms`;
  return `${trim(ns / 1e9)} s`;
}

// Three significant digits, no trailing zeros: 1.50 → "1.5", 123.4 → "123".
function trim(v: number): string {
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return String(Number(v.toFixed(digits)));
}

export function formatBytes(b: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = b, u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? `${b} B` : `${trim(v)} ${units[u]}`;
}

export const formatGBps = (gbps: number) => `${trim(gbps)} GB/s`;
export const formatPct = (fraction: number) => `${trim(fraction * 100)}%`;
export const formatCount = (n: number) => n.toLocaleString('en-US');

// A signed delta: "+1.2 ms", "−300 µs" (a real minus sign).
export function formatDelta(ns: number): string {
  if (ns === 0) return '0';
  return (ns > 0 ? '+' : '−') + formatDuration(Math.abs(ns));
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]!));
}
