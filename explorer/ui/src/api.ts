// The explorer's JSON API (src/opscope/explorer/api.h), typed. Times are ns from the
// profile's t = 0.
import type { AnalysesView } from './analyses';
import type { RooflineData } from './roofline';

export type Layer = 'framework' | 'runtime' | 'device';

export interface DeviceInfo { index: number; name: string; description: string; num_cores: number }

export interface ProfileEntry {
  id: number; label: string; source: string; ok: boolean; error?: string;
  device?: DeviceInfo | null; devices?: DeviceInfo[]; config?: unknown;
  totals?: Record<string, number>; events?: number; span_ns?: number; dropped?: number;
  dropped_per_track?: { track: string; dropped: number }[]; peak_gbps?: number;
}

export interface LaneInfo {
  lane: number; name: string; group: string; layer: Layer; track: number; depth: number; events: number;
}
export interface Tracks { lanes: LaneInfo[]; names: string[]; t0: number; t1: number }

export interface LaneWindow { lane: number; t0: number[]; t1: number[]; e: number[]; name: number[]; n: number[] }
// [launch event, kernel event, launch lane, launch end, kernel lane, kernel start]
export type Flow = [number, number, number, number, number, number];
export interface TimelineWindow {
  t0: number; t1: number; px: number; lanes: LaneWindow[]; flows: Flow[]; flows_omitted: boolean;
}

export interface EventBrief { e: number; name: string; kind: string; layer: Layer; t0: number; t1: number; lane: number; launch?: number }
export interface EventDetails extends EventBrief {
  dur_ns: number; id: number; parent: number; track: number; track_name: string;
  device: number; stream: number; args: Record<string, number>; shapes: string; source: string;
  chain: { ops: EventBrief[]; launches: EventBrief[]; kernels: EventBrief[]; truncated: boolean };
  artifact: { manifest?: unknown; source?: string } | null;
}

export interface Recommendation {
  rank: number; kind: string; title: string; detail: string; impact_ns: number;
  evidence: { label: string; text: string }[]; events: number[];
  range?: [number, number];  // a trace finding's timeline range
}
export interface Summary {
  span_ns: number; host_ns: number; device_ns: number; device_core_ns: number;
  cores: { lane: number; name: string; busy_ns: number; kernels: number; utilization: number }[];
  kernels: { name: string; launches: number; device_ns: number; bytes: number; flops: number; gbps: number; gflops: number; peak_fraction: number }[];
  peak_gbps: number; peak_source: string;
  top_ops: { name: string; kind: string; calls: number; self_cpu_ns: number; self_device_ns: number; device_total_ns: number }[];
  recommendations: Recommendation[]; dropped: number;
  roofline: RooflineData;
  memory: { device: number; name: string; peak_bytes: number; peak_t: number; peak_op: string; allocs: number }[];
  analyses?: AnalysesView;
}

export interface OpRow {
  name: string; kind: string; input_shapes: string; calls: number;
  self_cpu_ns: number; self_cpu_pct: number; cpu_total_ns: number; cpu_total_pct: number; cpu_avg_ns: number;
  self_device_ns: number; self_device_pct: number; device_total_ns: number; device_total_pct: number; device_avg_ns: number;
  bytes: number; flops: number; gbps: number; gflops: number; roofline_pct: number;
  self_device_memory: number; device_memory: number; self_device_allocs: number; device_allocs: number;
}
export interface OpsTable { rows: OpRow[]; self_cpu_total_ns: number; self_device_total_ns: number; dropped: number; has_memory: boolean }

// A device's allocated bytes as a step series: bytes[i] holds from t[i] to t[i + 1].
export interface MemoryPeak { bytes: number; t: number; op: string; start_bytes: number; end_bytes: number; allocs: number; frees: number }
export interface MemorySeries {
  device: number; name: string; t: number[]; bytes: number[]; events: number; downsampled: boolean;
  window_max: { bytes: number; t: number }; peak: MemoryPeak;
}
export interface MemoryWindow { t0: number; t1: number; points: number; devices: MemorySeries[] }

export interface SearchResult {
  q: string; total: number; names: { name: string; count: number }[]; events: EventBrief[]; truncated: boolean;
}

export interface RangeStats {
  t0: number; t1: number; duration_ns: number; kernel_bytes: number; distinct_names: number;
  layers: Record<Layer, { events: number; busy_ns: number }>;
  names: { name: string; layer: Layer; count: number; time_ns: number }[];
}

export interface CompareRow {
  name: string; kind: string; in_a: boolean; in_b: boolean; a_calls: number; b_calls: number;
  a_self_cpu_ns: number; b_self_cpu_ns: number; a_self_device_ns: number; b_self_device_ns: number;
  a_device_total_ns: number; b_device_total_ns: number;
  delta_self_device_ns: number; delta_self_cpu_ns: number; delta_device_total_ns: number;
}
export interface CompareSide { id: number; label: string; self_cpu_total_ns: number; self_device_total_ns: number; t0: number; t1: number; span_ns: number }
export interface Compare { a: CompareSide; b: CompareSide; rows: CompareRow[]; device_ratio: number }

// Instruction samples in a window (the instructions layer): parallel arrays, thinned to
// at most `max`; op and function are indexes into ops and functions.
export interface SampleWindow { count: number; stride: number; t: number[]; track: number[]; op: number[]; function: number[]; ops: string[]; functions: string[] }

export class ApiError extends Error {
  constructor(public status: number, message: string) { super(message); }
}

// The access token of a server on a network address (`opscope explore --host ADDR`): it
// comes in the page's URL as printed (?token=...) and goes with every API request in a
// header (not in the URL, where logs would keep it).
export function accessToken(): string | null {
  return typeof location === 'undefined' ? null : new URLSearchParams(location.search).get('token');
}

export async function getJSON<T>(path: string, params: Record<string, string | number> = {}): Promise<T> {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) qs.set(k, String(v));
  const url = qs.toString() ? `${path}?${qs}` : path;
  const token = accessToken();
  const res = await fetch(url, token ? { headers: { Authorization: `token ${token}` } } : undefined);
  let body: unknown = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const msg = body && typeof body === 'object' && 'error' in body ? String((body as { error: unknown }).error) : res.statusText;
    throw new ApiError(res.status, msg);
  }
  return body as T;
}

const P = (id: number) => `/api/profiles/${id}`;
export const api = {
  profiles: () => getJSON<{ profiles: ProfileEntry[] }>('/api/profiles'),
  summary: (id: number) => getJSON<Summary>(`${P(id)}/summary`),
  tracks: (id: number) => getJSON<Tracks>(`${P(id)}/tracks`),
  timeline: (id: number, t0: number, t1: number, px: number) =>
    getJSON<TimelineWindow>(`${P(id)}/timeline`, { t0: Math.floor(t0), t1: Math.ceil(t1), px: Math.max(1, Math.round(px)) }),
  memory: (id: number, t0?: number, t1?: number, points = 2000) =>
    getJSON<MemoryWindow>(`${P(id)}/memory`, t0 === undefined || t1 === undefined ? { points }
      : { t0: Math.floor(t0), t1: Math.max(Math.ceil(t1), Math.floor(t0) + 1), points: Math.max(3, Math.min(2000, Math.round(points))) }),
  range: (id: number, t0: number, t1: number) => getJSON<RangeStats>(`${P(id)}/range`, { t0: Math.floor(t0), t1: Math.ceil(t1) }),
  event: (id: number, e: number) => getJSON<EventDetails>(`${P(id)}/event/${e}`),
  ops: (id: number) => getJSON<OpsTable>(`${P(id)}/ops`),
  search: (id: number, q: string, exact = false, limit = 200) =>
    getJSON<SearchResult>(`${P(id)}/search`, { q, exact: exact ? 1 : 0, limit }),
  compare: (a: number, b: number) => getJSON<Compare>('/api/compare', { a, b }),
  samples: (id: number, t0: number, t1: number, max = 20000) =>
    getJSON<SampleWindow>(`${P(id)}/samples`, { t0: Math.floor(t0), t1: Math.ceil(t1), max }),
};
