// The summary's roofline chart: each framework op at its arithmetic intensity (flops per
// byte its kernels moved) and achieved GFLOP/s, under the device's two roofs — memory
// bandwidth (slope) and compute (flat) — as measured by the profile's probes.
import { escapeHtml as h, formatDuration, formatGBps, formatPct } from './format';

export interface RooflinePoint {
  name: string; calls: number; device_ns: number; bytes: number; flops: number;
  ai: number; gflops: number; gbps: number; bound: string; fraction: number;
}
export interface RooflineData {
  peak_gbps: number; peak_gflops: number; ridge: number; known: boolean;
  points: RooflinePoint[]; data_only_ops: number;
}

// Decade-aligned log10 bounds that hold every value (positive ones only).
export function logBounds(values: number[]): [number, number] {
  const pos = values.filter((v) => v > 0 && Number.isFinite(v));
  if (!pos.length) return [0, 1];
  const lo = Math.floor(Math.log10(Math.min(...pos)));
  const hi = Math.ceil(Math.log10(Math.max(...pos)));
  return [lo, hi > lo ? hi : lo + 1];
}

// The attainable GFLOP/s at intensity `ai`: min(compute roof, ai × bandwidth roof).
export const attainable = (r: RooflineData, ai: number) => Math.min(r.peak_gflops, ai * r.peak_gbps);

const W = 560, H = 320, L = 56, R = 16, T = 14, B = 40;

export function rooflineSvg(r: RooflineData): string {
  if (!r.points.length) return '<p class="muted">No op with floating-point work recorded bytes and flops.</p>';
  const xs = r.points.map((p) => p.ai), ys = r.points.map((p) => p.gflops);
  if (r.known) { xs.push(r.ridge * 4, r.ridge / 8); ys.push(r.peak_gflops * 1.5); }
  const [x0, x1] = logBounds(xs), [y0, y1] = logBounds(ys);
  const px = (v: number) => L + ((Math.log10(v) - x0) / (x1 - x0)) * (W - L - R);
  const py = (v: number) => H - B - ((Math.log10(v) - y0) / (y1 - y0)) * (H - T - B);
  const grid: string[] = [];
  for (let d = x0; d <= x1; d++)
    grid.push(`<line class="grid" x1="${px(10 ** d)}" x2="${px(10 ** d)}" y1="${T}" y2="${H - B}"/>` +
      `<text class="tick" x="${px(10 ** d)}" y="${H - B + 14}" text-anchor="middle">${tickLabel(d)}</text>`);
  for (let d = y0; d <= y1; d++)
    grid.push(`<line class="grid" x1="${L}" x2="${W - R}" y1="${py(10 ** d)}" y2="${py(10 ** d)}"/>` +
      `<text class="tick" x="${L - 6}" y="${py(10 ** d) + 4}" text-anchor="end">${tickLabel(d)}</text>`);
  let roof = '';
  if (r.known) {
    // The slope from the left edge to the ridge, then flat at the compute peak.
    const a0 = 10 ** x0, a1 = 10 ** x1;
    const left = Math.max(a0, (10 ** y0) / r.peak_gbps);
    roof = `<polyline class="roof" data-testid="roof" points="${px(left)},${py(attainable(r, left))} ${px(r.ridge)},${py(r.peak_gflops)} ${px(a1)},${py(r.peak_gflops)}"/>` +
      `<text class="roof-label" x="${px(a1) - 4}" y="${py(r.peak_gflops) - 5}" text-anchor="end">${r.peak_gflops.toFixed(0)} GFLOP/s (matmul probe)</text>` +
      `<text class="roof-label" x="${px(left) + 4}" y="${py(attainable(r, left)) - 6}">${formatGBps(r.peak_gbps)} (stream probe)</text>`;
  }
  const maxNs = Math.max(...r.points.map((p) => p.device_ns));
  const dots = r.points.map((p) => {
    const rad = 3 + 7 * Math.sqrt(p.device_ns / maxNs);
    const tip = `${p.name}: ${p.ai.toPrecision(3)} flop/B, ${p.gflops.toPrecision(3)} GFLOP/s, ${formatGBps(p.gbps)}, ` +
      `${formatDuration(p.device_ns)} on the device in ${p.calls} calls` + (r.known ? `, ${formatPct(p.fraction)} of the ${p.bound} roof` : '');
    return `<circle class="pt pt-${h(p.bound || 'unknown')}" data-op="${h(p.name)}" cx="${px(p.ai)}" cy="${py(p.gflops)}" r="${rad.toFixed(1)}"><title>${h(tip)}</title></circle>`;
  }).join('');
  return `<svg class="roofline" data-testid="roofline" viewBox="0 0 ${W} ${H}" role="img" aria-label="roofline chart">
    ${grid.join('')}${roof}${dots}
    <text class="axis" x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">arithmetic intensity (flop / byte)</text>
    <text class="axis" transform="translate(14 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">GFLOP/s</text>
  </svg>` + (r.known ? '' : '<p class="muted small">This profile carries no device peaks (run it through <code>opscope profile</code>): no roofs drawn.</p>') +
    (r.data_only_ops ? `<p class="muted small">${r.data_only_ops} ops move data without flops (copies, concat) and are not on the chart.</p>` : '');
}

function tickLabel(decade: number): string {
  const v = 10 ** decade;
  return decade >= 0 && decade < 4 ? String(v) : `1e${decade}`;
}
