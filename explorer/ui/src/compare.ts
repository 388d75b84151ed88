// Compare: two profiles side by side (e.g. naive vs compiled): the per-op delta table and
// both timelines on one time scale, each from its own start, zoomed and panned together.
import { api, type CompareRow, type ProfileEntry } from './api';
import { escapeHtml as h, formatDelta, formatDuration } from './format';
import { renderTable } from './table';
import { Timeline } from './timeline';

export async function renderCompare(host: HTMLElement, a: number, b: number, profiles: ProfileEntry[], go: (hash: string) => void): Promise<Timeline[]> {
  const [cmp, ta, tb] = await Promise.all([api.compare(a, b), api.tracks(a), api.tracks(b)]);
  const options = (sel: number) => profiles.filter((p) => p.ok)
    .map((p) => `<option value="${p.id}"${p.id === sel ? ' selected' : ''}>${h(p.label)}</option>`).join('');
  const ratio = cmp.device_ratio;
  host.innerHTML = `
    <section class="page" data-testid="compare">
      <div class="page-head compare-head"><h1>Compare</h1>
        <select id="cmp-a" aria-label="Profile A">${options(a)}</select><span class="muted">vs</span>
        <select id="cmp-b" aria-label="Profile B">${options(b)}</select></div>
      <div class="metrics">
        <div class="metric"><span>${h(cmp.a.label)} · device</span><strong>${formatDuration(cmp.a.self_device_total_ns)}</strong><em>CPU ${formatDuration(cmp.a.self_cpu_total_ns)}</em></div>
        <div class="metric"><span>${h(cmp.b.label)} · device</span><strong>${formatDuration(cmp.b.self_device_total_ns)}</strong><em>CPU ${formatDuration(cmp.b.self_cpu_total_ns)}</em></div>
        <div class="metric ${ratio > 0 && ratio < 1 ? 'good' : ratio > 1 ? 'warn' : ''}"><span>B / A device time</span><strong>${ratio > 0 ? ratio.toFixed(2) + '×' : '—'}</strong><em>${ratio > 0 && ratio < 1 ? (1 / ratio).toFixed(1) + '× faster' : ''}</em></div>
      </div>
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
  const delta = (v: unknown) => {
    const n = v as number;
    return `<span class="${n < 0 ? 'good' : n > 0 ? 'bad' : 'muted'}">${formatDelta(n)}</span>`;
  };
  renderTable<CompareRow>(host.querySelector('#delta')!, {
    rows: cmp.rows, filterFields: ['name', 'kind'], sortKey: 'a_device_total_ns', placeholder: 'Filter ops', testId: 'delta-table',
    columns: [
      { key: 'name', label: 'Name' }, { key: 'kind', label: 'Kind' },
      { key: 'a_calls', label: 'Calls A', numeric: true }, { key: 'b_calls', label: 'Calls B', numeric: true },
      { key: 'a_self_cpu_ns', label: 'Self CPU A', numeric: true, format: dur },
      { key: 'b_self_cpu_ns', label: 'Self CPU B', numeric: true, format: dur },
      { key: 'a_device_total_ns', label: 'Device A', numeric: true, format: dur },
      { key: 'b_device_total_ns', label: 'Device B', numeric: true, format: dur },
      { key: 'delta_device_total_ns', label: 'Δ Device', numeric: true, format: delta },
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
