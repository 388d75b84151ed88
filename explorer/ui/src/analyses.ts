// The trace analyses on the Summary (src/opscope/explorer/analyses_view.h): per rank a
// breakdown bar (compute, non-compute, idle), the idle-time split, comm/comp overlap and
// the launch-delay histogram. Every segment and bin links to the timeline range that
// shows it: the rank's span, the longest gap of an idle kind, the longest stretch of
// exposed communication, a bin's longest delay.
import { widthPct } from './dom';
import { escapeHtml as h, formatCount, formatDuration, formatPct } from './format';

export interface IdleKindFigure { kind: string; ns: number; gaps: number; t0: number; t1: number }
export interface DelayBinFigure { lo_ns: number; hi_ns: number; count: number; t0: number; t1: number }
export interface RankAnalysisView {
  rank: number; t0: number; t1: number; span_ns: number; compute_ns: number; non_compute_ns: number; idle_ns: number;
  idle: IdleKindFigure[];
  overlap: { comm_ns: number; overlap_ns: number; exposed_ns: number; ratio: number; t0: number; t1: number };
  launches: { launches: number; delay_p50_ns: number; delay_p90_ns: number; delay_max_ns: number; histogram: DelayBinFigure[] };
}
export interface AnalysesView { ranks: RankAnalysisView[]; slowest_rank: number | null; warnings: string[] }

// The timeline of profile `id` zoomed to [t0, t1].
export const rangeHref = (id: number, t0: number, t1: number) => `#/p/${id}/timeline?t0=${Math.floor(t0)}&t1=${Math.ceil(t1)}`;

const rankName = (r: number) => (r < 0 ? 'device' : `rank ${r}`);

const IDLE_LABEL: Record<string, string> = { host_wait: 'host wait', kernel_wait: 'kernel wait', other: 'other' };

// "0–1 µs", "1 ms+": a delay bin's bounds.
export function binLabel(b: { lo_ns: number; hi_ns: number }): string {
  return b.hi_ns < 0 ? `${formatDuration(b.lo_ns)}+` : `${formatDuration(b.lo_ns)}–${formatDuration(b.hi_ns)}`;
}

interface Segment { cls: string; label: string; ns: number; href?: string; title: string }

// A stacked bar of `total`: each segment as wide as its share (data-width: the page sets
// it, dom.ts), a link when it has a range.
function stackedBar(segments: Segment[], total: number, testId: string): string {
  const parts = segments.filter((s) => s.ns > 0).map((s) => {
    const style = `data-width="${widthPct(total > 0 ? s.ns / total : 0, 2)}"`;
    const title = `title="${h(s.title)}"`;
    return s.href
      ? `<a class="seg ${s.cls}" ${style} ${title} href="${s.href}" data-kind="${h(s.label)}"></a>`
      : `<span class="seg ${s.cls}" ${style} ${title} data-kind="${h(s.label)}"></span>`;
  });
  return `<div class="stack" data-testid="${testId}">${parts.join('')}</div>`;
}

function legend(items: [string, string][]): string {
  return `<div class="stack-legend">${items.map(([cls, label]) => `<span><span class="swatch ${cls}"></span>${h(label)}</span>`).join('')}</div>`;
}

function breakdownRow(id: number, r: RankAnalysisView, slowest: boolean): string {
  const span = rangeHref(id, r.t0, r.t1);
  const share = (ns: number) => formatPct(r.span_ns > 0 ? ns / r.span_ns : 0);
  const seg = (cls: string, label: string, ns: number): Segment =>
    ({ cls, label, ns, href: span, title: `${rankName(r.rank)} ${label}: ${formatDuration(ns)} (${share(ns)} of its span)` });
  return `<div class="stack-row"><a class="stack-label" href="${span}">${rankName(r.rank)}${slowest ? ' <span class="tag">slowest</span>' : ''}</a>
    ${stackedBar([seg('compute', 'compute', r.compute_ns), seg('non-compute', 'non-compute', r.non_compute_ns), seg('idle', 'idle', r.idle_ns)], r.span_ns, 'breakdown-bar')}
    <span class="stack-value">${formatDuration(r.span_ns)}</span></div>`;
}

function idleRow(id: number, r: RankAnalysisView): string {
  const segs = r.idle.map((k): Segment => ({
    cls: k.kind.replace('_', '-'), label: IDLE_LABEL[k.kind] ?? k.kind, ns: k.ns,
    href: k.gaps > 0 && k.t1 > k.t0 ? rangeHref(id, k.t0, k.t1) : undefined,
    title: `${IDLE_LABEL[k.kind] ?? k.kind}: ${formatDuration(k.ns)} in ${formatCount(k.gaps)} gaps; click for the longest (${formatDuration(k.t1 - k.t0)})`,
  }));
  return `<div class="stack-row"><span class="stack-label">${rankName(r.rank)}</span>${stackedBar(segs, r.idle_ns, 'idle-bar')}
    <span class="stack-value">${formatDuration(r.idle_ns)}</span></div>`;
}

function overlapRow(id: number, r: RankAnalysisView): string {
  const o = r.overlap;
  if (o.comm_ns <= 0) return `<div class="stack-row"><span class="stack-label">${rankName(r.rank)}</span><span class="muted small">no communication</span><span></span></div>`;
  const exposed = o.t1 > o.t0 ? rangeHref(id, o.t0, o.t1) : undefined;
  const segs: Segment[] = [
    { cls: 'overlapped', label: 'overlapped', ns: o.overlap_ns, title: `under computation: ${formatDuration(o.overlap_ns)}` },
    { cls: 'exposed', label: 'exposed', ns: o.exposed_ns, href: exposed, title: `exposed: ${formatDuration(o.exposed_ns)}; click for the longest stretch (${formatDuration(o.t1 - o.t0)})` },
  ];
  return `<div class="stack-row"><span class="stack-label">${rankName(r.rank)}</span>${stackedBar(segs, o.comm_ns, 'overlap-bar')}
    <span class="stack-value">${formatPct(o.ratio)}</span></div>`;
}

// One rank's launch delays: a bar per bin, each linking to its longest delay.
export function delayHistogram(id: number, r: RankAnalysisView): string {
  const bins = r.launches.histogram;
  const most = Math.max(1, ...bins.map((b) => b.count));
  return `<div class="histogram" data-testid="delay-histogram">${bins.map((b) => {
    const bar = `<span class="hbar" data-width="${widthPct(b.count / most)}"></span>`;
    const label = `<span class="hlabel">${binLabel(b)}</span>`;
    const count = `<span class="hcount">${formatCount(b.count)}</span>`;
    return b.count > 0 && b.t1 > b.t0
      ? `<a class="hrow" href="${rangeHref(id, b.t0, b.t1)}" title="longest: ${formatDuration(b.t1 - b.t0)} from the call to the kernel">${label}<span class="htrack">${bar}</span>${count}</a>`
      : `<div class="hrow">${label}<span class="htrack">${bar}</span>${count}</div>`;
  }).join('')}</div>`;
}

export function analysesHtml(id: number, a: AnalysesView | undefined): string {
  if (!a || !a.ranks.length) {
    const why = a?.warnings.length ? a.warnings.join(' ') : 'The device analyses need device events (kernels, copies).';
    return `<p class="muted" data-testid="analyses-empty">${h(why)}</p>`;
  }
  const rows = (f: (r: RankAnalysisView) => string) => a.ranks.map(f).join('');
  const first = a.ranks.find((r) => r.rank === a.slowest_rank) ?? a.ranks[0];
  return `<div class="analyses" data-testid="analyses">
    ${a.warnings.length ? `<p class="warn small">${a.warnings.map(h).join('<br>')}</p>` : ''}
    <div class="two-col">
      <div><h3>Time per rank</h3>${legend([['compute', 'compute'], ['non-compute', 'non-compute (comm, copies)'], ['idle', 'idle']])}
        <div class="stacks">${rows((r) => breakdownRow(id, r, r.rank === a.slowest_rank))}</div></div>
      <div><h3>Idle time</h3>${legend([['host-wait', 'host wait'], ['kernel-wait', 'kernel wait'], ['other', 'other']])}
        <div class="stacks">${rows((r) => idleRow(id, r))}</div></div>
    </div>
    <div class="two-col">
      <div><h3>Communication overlapped by computation</h3>${legend([['overlapped', 'overlapped'], ['exposed', 'exposed']])}
        <div class="stacks">${rows((r) => overlapRow(id, r))}</div></div>
      <div><h3>Launch delay (call end to kernel start)</h3>${a.ranks.map((r) => `
        <details${r === first ? ' open' : ''}><summary>${rankName(r.rank)} · ${formatCount(r.launches.launches)} launches · median ${formatDuration(r.launches.delay_p50_ns)}, p90 ${formatDuration(r.launches.delay_p90_ns)}</summary>
        ${delayHistogram(id, r)}</details>`).join('')}</div>
    </div>
  </div>`;
}
