// The timeline's visible window: the mapping time ↔ pixels, zoom about a point, pan,
// and the ruler's ticks. Pure functions over a plain value, so they are unit tested.

export interface Viewport {
  t0: number;      // ns at the left edge of the plot
  t1: number;      // ns at the right edge
  width: number;   // plot width in CSS pixels
}

export interface Bounds { begin: number; end: number }

export const MIN_SPAN_NS = 100;  // zoom stops at 100 ns across the plot

export const timeToX = (v: Viewport, t: number) => ((t - v.t0) / (v.t1 - v.t0)) * v.width;
export const xToTime = (v: Viewport, x: number) => v.t0 + (x / v.width) * (v.t1 - v.t0);
export const nsPerPx = (v: Viewport) => (v.t1 - v.t0) / v.width;

// Keeps the window within the profile (with a margin) and no narrower than MIN_SPAN_NS.
export function clampView(v: Viewport, b: Bounds): Viewport {
  const full = Math.max(MIN_SPAN_NS, b.end - b.begin);
  const margin = full * 0.05;
  const lo = b.begin - margin, hi = b.end + margin;
  let span = Math.min(Math.max(v.t1 - v.t0, MIN_SPAN_NS), hi - lo);
  let t0 = v.t0;
  if (t0 < lo) t0 = lo;
  if (t0 + span > hi) t0 = hi - span;
  return { t0, t1: t0 + span, width: v.width };
}

// factor < 1 zooms in; the time under pixel x stays under x.
export function zoomAt(v: Viewport, factor: number, x: number, b: Bounds): Viewport {
  const t = xToTime(v, x);
  const span = (v.t1 - v.t0) * factor;
  const t0 = t - (x / v.width) * span;
  return clampView({ t0, t1: t0 + span, width: v.width }, b);
}

// Moves the window by dx pixels (positive: later times come into view).
export function panBy(v: Viewport, dx: number, b: Bounds): Viewport {
  const dt = dx * nsPerPx(v);
  return clampView({ t0: v.t0 + dt, t1: v.t1 + dt, width: v.width }, b);
}

export function fitView(b: Bounds, width: number): Viewport {
  const span = Math.max(MIN_SPAN_NS, b.end - b.begin);
  const pad = span * 0.02;
  return { t0: b.begin - pad, t1: b.begin + span + pad, width };
}

export interface Tick { t: number; x: number; label: string; major: boolean }

// Ticks at 1-2-5 steps, about one per `spacing` px, labelled relative to `origin`.
export function rulerTicks(v: Viewport, spacing = 90, origin = 0): Tick[] {
  const span = v.t1 - v.t0;
  if (!(span > 0) || v.width <= 0) return [];
  const raw = (span / v.width) * spacing;
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? 10 * pow;
  const ticks: Tick[] = [];
  const first = Math.ceil((v.t0 - origin) / step) * step + origin;
  for (let t = first; t <= v.t1 && ticks.length < 1000; t += step) {
    const rel = t - origin;
    ticks.push({ t, x: timeToX(v, t), label: tickLabel(rel, step), major: Math.round(rel / step) % 5 === 0 });
  }
  return ticks;
}

// A tick label in the unit of the step, with as many decimals as the step needs.
export function tickLabel(ns: number, step: number): string {
  const units: [number, string][] = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
  const [scale, unit] = units.find(([s]) => step * 2 >= s) ?? [1, 'ns'];
  const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
  const v = ns / scale;
  return `${Math.abs(v) < 1e-12 ? '0' : v.toFixed(decimals)} ${unit}`;
}
