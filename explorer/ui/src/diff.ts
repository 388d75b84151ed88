// The compare view's data: GET /api/compare, computed by the same diff as `opscope diff A B`
// (src/opscope/profiler/diff.h), and the pure helpers that shape it for display.
import type { CompareRow, CompareSide } from './api';
import { formatBytes } from './format';

export type DiffStatus = 'same' | 'changed' | 'added' | 'removed';

export interface DiffRow extends CompareRow {
  status: DiffStatus; delta_calls: number;
  a_cpu_total_ns: number; b_cpu_total_ns: number; delta_cpu_total_ns: number;
  a_bytes: number; b_bytes: number; delta_bytes: number; a_flops: number; b_flops: number;
}
export interface DiffTotals {
  self_cpu_total_ns: number; self_device_total_ns: number; span_ns: number; launches: number;
  bytes: number; flops: number; events: number; dropped: number; steps: number;
  peak_memory: number;  // the device allocator's peak (0 and has_memory false: none recorded)
}
export type DiffSide = CompareSide & DiffTotals & { has_memory: boolean };
export interface Diff {
  a: DiffSide; b: DiffSide; delta: DiffTotals; counts: Record<DiffStatus, number>;
  warnings: string[]; rows: DiffRow[]; device_ratio: number;
}

// Rows of one status, the heaviest first (by their time on the side that has them).
export function rowsWithStatus(rows: DiffRow[], status: DiffStatus): DiffRow[] {
  const weight = (r: DiffRow) => Math.max(r.a_device_total_ns, r.b_device_total_ns, r.a_cpu_total_ns, r.b_cpu_total_ns);
  return rows.filter((r) => r.status === status).sort((x, y) => weight(y) - weight(x) || x.name.localeCompare(y.name));
}

// B against A: "+12.3%", "−40%" (a real minus sign), "new" where A had none.
export function formatChange(a: number, b: number): string {
  if (a === 0) return b === 0 ? '0%' : 'new';
  const p = (100 * (b - a)) / a;
  const digits = Math.abs(p) >= 100 ? 0 : 1;
  const v = Number(Math.abs(p).toFixed(digits));
  return v === 0 ? '0%' : `${p > 0 ? '+' : '−'}${v}%`;
}

export function formatSignedBytes(n: number): string {
  if (n === 0) return '0';
  return (n > 0 ? '+' : '−') + formatBytes(Math.abs(n));
}
