// The memory track: a device's allocated bytes (the caching allocator's alloc/free events)
// drawn under the timeline's lanes as a step area in the same viewport, with the profile's
// peak marked. The server sends at most a few thousand points per window, each the maximum
// of its bucket, so a peak never vanishes when zoomed out.

import type { MemoryPeak, MemorySeries } from './api';
import { formatBytes, formatDuration } from './format';
import { timeToX, type Viewport } from './viewport';

export interface Steps { t: number[]; bytes: number[] }

// Bytes in effect at time t: the value of the last point at or before t; null outside
// the series.
export function valueAt(s: Steps, t: number): number | null {
  const n = s.t.length;
  if (!n || t < s.t[0] || t > s.t[n - 1]) return null;
  let lo = 0, hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (s.t[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return s.bytes[lo];
}

// The step outline in plot pixels: x from the viewport, y from `height` (0 bytes) up to
// 0 (`scale` bytes and above). Each value holds until the next point's time.
export function stepPoints(s: Steps, v: Viewport, height: number, scale: number): [number, number][] {
  const y = (b: number) => height - (scale > 0 ? Math.min(1, Math.max(0, b / scale)) : 0) * height;
  const pts: [number, number][] = [];
  for (let i = 0; i < s.t.length; i++) {
    const x = timeToX(v, s.t[i]);
    if (i > 0) pts.push([x, y(s.bytes[i - 1])]);
    pts.push([x, y(s.bytes[i])]);
  }
  return pts;
}

export const peakLabel = (p: MemoryPeak) => `peak ${formatBytes(p.bytes)}`;

// The hover readout at time t, or null outside the series.
export function readout(s: MemorySeries, t: number): string | null {
  const v = valueAt(s, t);
  return v === null ? null : `${s.name}: ${formatBytes(v)} allocated at ${formatDuration(t)}`;
}

export interface MemoryColors { line: string; peak: string; text: string }

// Draws one device's row; `left` is the plot's x origin on the canvas. Returns the peak
// marker's canvas x, or null when the peak is outside the view.
export function drawMemoryRow(ctx: CanvasRenderingContext2D, s: MemorySeries, v: Viewport, left: number,
  top: number, height: number, colors: MemoryColors): number | null {
  const scale = s.peak.bytes * 1.1;
  const pts = stepPoints(s, v, height, scale);
  if (pts.length) {
    ctx.beginPath();
    ctx.moveTo(left + pts[0][0], top + height);
    for (const [x, y] of pts) ctx.lineTo(left + x, top + y);
    ctx.lineTo(left + pts[pts.length - 1][0], top + height);
    ctx.closePath();
    ctx.globalAlpha = 0.2;
    ctx.fillStyle = colors.line;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.beginPath();
    pts.forEach(([x, y], i) => (i ? ctx.lineTo(left + x, top + y) : ctx.moveTo(left + x, top + y)));
    ctx.strokeStyle = colors.line;
    ctx.lineWidth = 1.25;
    ctx.stroke();
  }
  const px = timeToX(v, s.peak.t);
  if (px < 0 || px > v.width) return null;
  const x = left + px, y = top + stepPoints({ t: [s.peak.t], bytes: [s.peak.bytes] }, v, height, scale)[0][1];
  ctx.strokeStyle = colors.peak;
  ctx.setLineDash([3, 3]);
  ctx.beginPath(); ctx.moveTo(x + 0.5, top); ctx.lineTo(x + 0.5, top + height); ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = colors.peak;
  ctx.beginPath(); ctx.arc(x, y, 3, 0, 2 * Math.PI); ctx.fill();
  const label = peakLabel(s.peak) + (s.peak.op ? ` · ${s.peak.op}` : '');
  ctx.font = '600 11px ui-sans-serif, system-ui, sans-serif';
  ctx.textBaseline = 'top';
  const w = ctx.measureText(label).width;
  const lx = x + 6 + w > left + v.width ? x - 6 - w : x + 6;  // keep the label on the plot
  ctx.fillStyle = colors.text;
  ctx.fillText(label, lx, top + 2);
  ctx.textBaseline = 'middle';
  return x;
}
