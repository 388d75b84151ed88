// Compare: two profiles side by side (e.g. naive vs compiled): the totals and their
// change, the ops added and removed, the per-op delta table (the numbers of
// `opscope diff A B`), and both timelines on one time scale, each from its own start,
// zoomed and panned together.
import { api, type ProfileEntry } from './api';
import { type Diff, type DiffRow, formatChange, formatSignedBytes, rowsWithStatus } from './diff';
import { escapeHtml as h, formatBytes, formatDelta, formatDuration } from './format';
import { renderTable } from './table';
import { Timeline } from './timeline';

const LIST_LIMIT = 12;

// The names of the rows only one side has, heaviest first.
function changeList(rows: DiffRow[], side: 'a' | 'b', title: string, testId: string): string {
  const items = rows.slice(0, LIST_LIMIT).map((r) => {
    const ns = side === 'a' ? r.a_device_total_ns || r.a_cpu_total_ns : r.b_device_total_ns || r.b_cpu_total_ns;
    const calls = side === 'a' ? r.a_calls : r.b_calls;
    return `<li><span class="kind-tag">${h(r.kind)}</span><b>${h(r.name)}</b><span class="muted">${calls}× · ${formatDuration(ns)}</span></li>`;
  }).join('');
  const more = rows.length > LIST_LIMIT ? `<li class="muted">and ${rows.length - LIST_LIMIT} more (filter the table by “${side === 'a' ? 'removed' : 'added'}”)</li>` : '';
  return `<div class="cmp-list" data-testid="${testId}"><h3>${title} <span class="muted">(${rows.length})</span></h3>
    <ul>${items || '<li class="muted">none</li>'}${more}</ul></div>`;
}

export async function renderCompare(host: HTMLElement, a: number, b: number, profiles: ProfileEntry[], go: (hash: string) => void): Promise<Timeline[]> {
  const [cmp, ta, tb] = await Promise.all([api.compare(a, b) as unknown as Promise<Diff>, api.tracks(a), api.tracks(b)]);
  const options = (sel: number) => profiles.filter((p) => p.ok)
    .map((p) => `<option value="${p.id}"${p.id === sel ? ' selected' : ''}>${h(p.label)}</option>`).join('');
  const ratio = cmp.device_ratio;
  const tone = (n: number) => (n < 0 ? 'good' : n > 0 ? 'bad' : 'muted');
  const added = rowsWithStatus(cmp.rows, 'added'), removed = rowsWithStatus(cmp.rows, 'removed');
  const d = cmp.delta;
  const warnings = cmp.warnings.length
    ? `<ul class="cmp-warnings" data-testid="compare-warnings">${cmp.warnings.map((w) => `<li>${h(w)}</li>`).join('')}</ul>` : '';
  host.innerHTML = `
    <section class="page" data-testid="compare">
      <div class="page-head compare-head"><h1>Compare</h1>
        <select id="cmp-a" aria-label="Profile A">${options(a)}</select><span class="muted">vs</span>
        <select id="cmp-b" aria-label="Profile B">${options(b)}</select></div>
      ${warnings}
      <div class="metrics">
        <div class="metric"><span>${h(cmp.a.label)} · device</span><strong>${formatDuration(cmp.a.self_device_total_ns)}</strong><em>CPU ${formatDuration(cmp.a.self_cpu_total_ns)}</em></div>
        <div class="metric"><span>${h(cmp.b.label)} · device</span><strong>${formatDuration(cmp.b.self_device_total_ns)}</strong><em>CPU ${formatDuration(cmp.b.self_cpu_total_ns)}</em></div>
        <div class="metric ${ratio > 0 && ratio < 1 ? 'good' : ratio > 1 ? 'warn' : ''}"><span>B / A device time</span><strong>${ratio > 0 ? ratio.toFixed(2) + '×' : '—'}</strong><em>${ratio > 0 && ratio < 1 ? (1 / ratio).toFixed(1) + '× faster' : ''}</em></div>
        <div class="metric" data-testid="total-change"><span>Total change B − A</span>
          <strong class="${tone(d.self_device_total_ns)}">${formatDelta(d.self_device_total_ns)}</strong>
          <em>device ${formatChange(cmp.a.self_device_total_ns, cmp.b.self_device_total_ns)} · CPU <span class="${tone(d.self_cpu_total_ns)}">${formatDelta(d.self_cpu_total_ns)}</span> · span ${formatDelta(d.span_ns)}</em></div>
        <div class="metric" data-testid="bytes-change"><span>Bytes moved</span><strong>${formatBytes(cmp.b.bytes)}</strong>
          <em>A ${formatBytes(cmp.a.bytes)} · ${formatSignedBytes(d.bytes)} · launches ${cmp.a.launches} → ${cmp.b.launches}</em></div>
        ${cmp.a.has_memory && cmp.b.has_memory ? `<div class="metric" data-testid="memory-change"><span>Peak device memory</span><strong>${formatBytes(cmp.b.peak_memory)}</strong>
          <em>A ${formatBytes(cmp.a.peak_memory)} · <span class="${tone(d.peak_memory)}">${formatSignedBytes(d.peak_memory)}</span> · ${formatChange(cmp.a.peak_memory, cmp.b.peak_memory)}</em></div>` : ''}
        <div class="metric" data-testid="op-changes"><span>Rows added / removed</span><strong>+${added.length} / −${removed.length}</strong>
          <em>${cmp.counts.changed} changed · ${cmp.counts.same} same</em></div>
      </div>
      <div class="cmp-lists">${changeList(added, 'b', `Added in ${h(cmp.b.label)}`, 'added-ops')}${changeList(removed, 'a', `Removed from ${h(cmp.a.label)}`, 'removed-ops')}</div>
      <div id="delta"></div>
      <h2>Timelines <span class="muted small">aligned at each profile's start, zoomed together</span></h2>
      <div class="compare-timelines"><div class="cmp-label">A · ${h(cmp.a.label)}</div><div id="tl-a"></div>
      <div class="cmp-label">B · ${h(cmp.b.label)}</div><div id="tl-b"></div></div>
    </section>`;
  const sel = (id: string) => host.querySelector<HTMLSelectElement>(id)!;
  const change = () => go(`#/compare/${sel('#cmp-a').value}/${sel('#cmp-b').value}`);
  sel('#cmp-a').addEventListener('change', change);
  sel('#cmp-b').addEventListener('change', change);
  const dur = (v: unknown) => formatDuration(v as number);
  const delta = (v: unknown) => `<span class="${tone(v as number)}">${formatDelta(v as number)}</span>`;
  const bytes = (v: unknown) => formatBytes(v as number);
  const status = (v: unknown) => `<span class="status-tag status-${h(String(v))}">${h(String(v))}</span>`;
  renderTable<DiffRow>(host.querySelector('#delta')!, {
    rows: cmp.rows, filterFields: ['name', 'kind', 'status'], sortKey: 'a_device_total_ns', placeholder: 'Filter by name, kind or status', testId: 'delta-table',
    columns: [
      { key: 'name', label: 'Name' }, { key: 'kind', label: 'Kind' }, { key: 'status', label: 'Status', format: status },
      { key: 'a_calls', label: 'Calls A', numeric: true }, { key: 'b_calls', label: 'Calls B', numeric: true },
      { key: 'a_self_cpu_ns', label: 'Self CPU A', numeric: true, format: dur },
      { key: 'b_self_cpu_ns', label: 'Self CPU B', numeric: true, format: dur },
      { key: 'a_device_total_ns', label: 'Device A', numeric: true, format: dur },
      { key: 'b_device_total_ns', label: 'Device B', numeric: true, format: dur },
      { key: 'delta_device_total_ns', label: 'Δ Device', numeric: true, format: delta },
      { key: 'a_bytes', label: 'Bytes A', numeric: true, format: bytes },
      { key: 'b_bytes', label: 'Bytes B', numeric: true, format: bytes },
    ],
  });
  // Linked views: the same span, each starting at its own profile's start.
  const tls: Timeline[] = [];
  const link = (from: Timeline, to: Timeline) => (v: { t0: number; t1: number; width: number }) => {
    const off = to.bounds.begin - from.bounds.begin;
    to.setView({ t0: v.t0 + off, t1: v.t1 + off, width: v.width }, false);
  };
  const extent = Math.max(ta.t1 - ta.t0, tb.t1 - tb.t0);
  const A = new Timeline(host.querySelector<HTMLElement>('#tl-a')!, { profile: a, tracks: ta, title: 'A', extent });
  const B = new Timeline(host.querySelector<HTMLElement>('#tl-b')!, { profile: b, tracks: tb, title: 'B', extent });
  A.setOnView(link(A, B));
  B.setOnView(link(B, A));
  tls.push(A, B);
  A.fit();
  (window as unknown as { __opscope: unknown }).__opscope = { timelines: tls };
  return tls;
}
