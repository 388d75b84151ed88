// The timeline's vertical layout: one row per lane, lanes of a group (a host thread's
// nesting depths) packed together, a gap and a header between groups; and hit testing of
// drawables in a lane by time (binary search over the window the server sent).

import type { LaneInfo, LaneWindow, Layer } from './api';

export interface Row {
  lane: number; y: number; height: number; group: string; layer: Layer; depth: number; first: boolean;
}
export interface Layout { rows: Row[]; byLane: Map<number, Row>; height: number }

export const ROW_HEIGHT = 20;
export const GROUP_GAP = 10;

export function layoutLanes(lanes: LaneInfo[], top = 0, rowHeight = ROW_HEIGHT, gap = GROUP_GAP): Layout {
  const rows: Row[] = [];
  const byLane = new Map<number, Row>();
  let y = top;
  let prevGroup: string | null = null;
  for (const l of lanes) {
    const first = l.group !== prevGroup;
    if (first && prevGroup !== null) y += gap;
    const row = { lane: l.lane, y, height: rowHeight, group: l.group, layer: l.layer, depth: l.depth, first };
    rows.push(row);
    byLane.set(l.lane, row);
    y += rowHeight;
    prevGroup = l.group;
  }
  return { rows, byLane, height: y - top };
}

export function rowAt(layout: Layout, y: number): Row | null {
  for (const r of layout.rows) if (y >= r.y && y < r.y + r.height) return r;
  return null;
}

// Index of the drawable in `w` covering time t (within `slop` ns either side), or -1.
export function drawableAt(w: LaneWindow, t: number, slop: number): number {
  const n = w.t0.length;
  let lo = 0, hi = n;  // first drawable with t1 >= t - slop
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (w.t1[mid] < t - slop) lo = mid + 1; else hi = mid;
  }
  let best = -1, bestDist = Infinity;
  for (let i = lo; i < n && w.t0[i] <= t + slop; i++) {
    const d = t < w.t0[i] ? w.t0[i] - t : t > w.t1[i] ? t - w.t1[i] : 0;
    if (d < bestDist) { best = i; bestDist = d; }
    if (d === 0) break;
  }
  return best;
}
