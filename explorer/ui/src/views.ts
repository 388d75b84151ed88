// The profiles list, the summary and the operator table.
import { api, type OpRow, type ProfileEntry, type Summary } from './api';
import { applyWidths, widthPct } from './dom';
import { escapeHtml as h, formatBytes, formatCount, formatDuration, formatGBps, formatPct } from './format';
import { rooflineSvg } from './roofline';
import { renderTable, type Column } from './table';

export function renderProfiles(host: HTMLElement, profiles: ProfileEntry[], go: (hash: string) => void): void {
  const ok = profiles.filter((p) => p.ok);
  host.innerHTML = `
    <section class="page">
      <div class="page-head"><h1>Profiles</h1><p class="muted">${profiles.length} loaded · pick one to read, or two to compare.</p></div>
      <div class="cards" data-testid="profiles">${profiles.map((p) => p.ok ? `
        <article class="card" data-testid="profile-card" data-id="${p.id}">
          <header><h2>${h(p.label)}</h2><label class="pick"><input type="checkbox" data-pick="${p.id}"> compare</label></header>
          <p class="muted small" title="${h(p.source)}">${h(p.device?.name ?? '')} · ${h(p.device?.description ?? '')}</p>
          <dl class="stats">
            <div><dt>span</dt><dd>${formatDuration(p.span_ns ?? 0)}</dd></div>
            <div><dt>events</dt><dd>${formatCount(p.events ?? 0)}</dd></div>
            <div><dt>ops</dt><dd>${formatCount(p.totals?.op ?? 0)}</dd></div>
            <div><dt>kernels</dt><dd>${formatCount(p.totals?.kernel ?? 0)}</dd></div>
            <div><dt>dropped</dt><dd class="${(p.dropped ?? 0) > 0 ? 'warn' : ''}">${formatCount(p.dropped ?? 0)}</dd></div>
          </dl>
          <details class="config"><summary>config</summary><pre class="code small">${h(JSON.stringify(p.config, null, 2))}</pre></details>
          <footer>
            <a class="button primary" href="#/p/${p.id}/timeline">Timeline</a>
            <a class="button" href="#/p/${p.id}/summary">Summary</a>
            <a class="button" href="#/p/${p.id}/ops">Operators</a>
          </footer>
        </article>` : `
        <article class="card error" data-testid="profile-error">
          <header><h2>${h(p.label)}</h2></header>
          <p><strong>Could not load this profile.</strong></p><p class="small">${h(p.error ?? '')}</p>
        </article>`).join('')}
      </div>
      ${ok.length >= 2 ? `<div class="compare-bar"><button class="button primary" id="compare" disabled>Compare selected</button>
        <span class="muted small">or <a href="#/compare/${ok[0].id}/${ok[ok.length - 1].id}">${h(ok[0].label)} vs ${h(ok[ok.length - 1].label)}</a></span></div>` : ''}
    </section>`;
  const picks = [...host.querySelectorAll<HTMLInputElement>('input[data-pick]')];
  const button = host.querySelector<HTMLButtonElement>('#compare');
  const chosen = () => picks.filter((p) => p.checked).map((p) => Number(p.dataset.pick));
  picks.forEach((p) => p.addEventListener('change', () => { if (button) button.disabled = chosen().length !== 2; }));
  button?.addEventListener('click', () => { const [a, b] = chosen(); go(`#/compare/${a}/${b}`); });
}

export function renderSummary(host: HTMLElement, id: number, s: Summary, go: (hash: string) => void): void {
  const devShare = s.span_ns > 0 ? s.device_ns / s.span_ns : 0;
  const hostShare = s.span_ns > 0 ? s.host_ns / s.span_ns : 0;
  host.innerHTML = `
    <section class="page">
      <div class="page-head"><h1>Summary</h1></div>
      <div class="metrics">
        <div class="metric"><span>span</span><strong>${formatDuration(s.span_ns)}</strong></div>
        <div class="metric"><span>host time in ops</span><strong>${formatDuration(s.host_ns)}</strong><em>${formatPct(hostShare)} of span</em></div>
        <div class="metric"><span>device busy</span><strong>${formatDuration(s.device_ns)}</strong><em>${formatPct(devShare)} of span</em></div>
        <div class="metric"><span>peak bandwidth</span><strong>${formatGBps(s.peak_gbps)}</strong><em>${h(s.peak_source)}</em></div>
        ${s.memory.map((m) => `<div class="metric" data-testid="memory-peak"><span>peak memory · ${h(m.name)}</span><strong>${formatBytes(m.peak_bytes)}</strong><em>${m.peak_op ? 'in ' + h(m.peak_op) + ' · ' : ''}at ${formatDuration(m.peak_t)}</em></div>`).join('')}
        <div class="metric ${s.dropped ? 'warn' : ''}"><span>dropped events</span><strong>${formatCount(s.dropped)}</strong></div>
      </div>
      <h2>Recommendations</h2>
      <ol class="recs" data-testid="recommendations">${s.recommendations.length ? s.recommendations.map((r) => `
        <li class="rec rec-${h(r.kind)}"><div class="rec-head"><span class="rank">${r.rank}</span><strong>${h(r.title)}</strong>
          ${r.impact_ns ? `<span class="impact">${r.kind === 'fuse' ? 'saves' : 'idle'} ${formatDuration(r.impact_ns)}</span>` : ''}</div>
          <p>${h(r.detail)}</p>
          <dl class="evidence" data-testid="rec-figures">${r.evidence.filter((f) => f.label !== 'fix').map((f) => `<div class="ev"><dt>${h(f.label)}</dt><dd>${h(f.text)}</dd></div>`).join('')}</dl>
          ${r.events.length ? `<a class="button small" href="#/p/${id}/timeline?events=${r.events.join(',')}">Show in timeline</a>` : ''}
        </li>`).join('') : '<li class="muted">Nothing stands out.</li>'}</ol>
      <h2>Roofline</h2>
      <div id="roofline">${rooflineSvg(s.roofline)}</div>
      <div class="two-col">
        <div><h2>Device cores</h2><div class="bars">${s.cores.map((c) => `
          <div class="bar-row"><span class="bar-label">${h(c.name)}</span><div class="bar"><div data-width="${widthPct(c.utilization)}"></div></div>
          <span class="bar-value">${formatPct(c.utilization)}</span></div>`).join('')}</div>
          <h2>Top ops</h2><div id="top-ops"></div></div>
        <div><h2>Kernels: achieved bandwidth</h2><div id="kernels"></div></div>
      </div>
    </section>`;
  applyWidths(host);
  renderTable(host.querySelector('#kernels')!, {
    rows: s.kernels, filterFields: ['name'], sortKey: 'device_ns', placeholder: 'Filter kernels',
    columns: [
      { key: 'name', label: 'Kernel' },
      { key: 'launches', label: 'Launches', numeric: true, format: (v) => formatCount(v as number) },
      { key: 'device_ns', label: 'Device time', numeric: true, format: (v) => formatDuration(v as number) },
      { key: 'bytes', label: 'Bytes', numeric: true, format: (v) => formatBytes(v as number) },
      { key: 'gbps', label: 'GB/s', numeric: true, format: (v) => formatGBps(v as number) },
      { key: 'peak_fraction', label: 'of peak', numeric: true, format: (v) => peakBar(v as number) },
    ],
    onRow: (r) => go(`#/p/${id}/timeline?select=${encodeURIComponent(r.name)}`),
  });
  renderTable(host.querySelector('#top-ops')!, {
    rows: s.top_ops, filterFields: ['name'], sortKey: 'device_total_ns', placeholder: 'Filter ops',
    columns: [
      { key: 'name', label: 'Op' },
      { key: 'calls', label: 'Calls', numeric: true },
      { key: 'self_cpu_ns', label: 'Self CPU', numeric: true, format: (v) => formatDuration(v as number) },
      { key: 'device_total_ns', label: 'Device total', numeric: true, format: (v) => formatDuration(v as number) },
    ],
    onRow: (r) => go(`#/p/${id}/timeline?select=${encodeURIComponent(r.name)}`),
  });
}

const peakBar = (f: number) =>
  `<span class="mini-bar"><span data-width="${widthPct(f, 0)}"></span></span> ${formatPct(f)}`;

export async function renderOps(host: HTMLElement, id: number, go: (hash: string) => void): Promise<void> {
  const t = await api.ops(id);
  host.innerHTML = `<section class="page"><div class="page-head"><h1>Operators</h1>
    <p class="muted">key_averages: a kernel's device time belongs to the op that launched it. Click a row to see its events.</p></div>
    <div id="ops-table"></div></section>`;
  const dur = (v: unknown) => formatDuration(v as number);
  const pct = (v: unknown) => `${(v as number).toFixed(1)}%`;
  const mem = (v: unknown) => formatBytes(v as number);
  renderTable<OpRow>(host.querySelector('#ops-table')!, {
    rows: t.rows, filterFields: ['name', 'kind'], sortKey: 'self_device_ns', placeholder: 'Filter by name or kind', testId: 'ops-table',
    columns: [
      { key: 'name', label: 'Name' },
      { key: 'kind', label: 'Kind' },
      { key: 'self_cpu_pct', label: 'Self CPU %', numeric: true, format: pct },
      { key: 'self_cpu_ns', label: 'Self CPU', numeric: true, format: dur },
      { key: 'cpu_total_pct', label: 'CPU total %', numeric: true, format: pct },
      { key: 'cpu_total_ns', label: 'CPU total', numeric: true, format: dur },
      { key: 'cpu_avg_ns', label: 'CPU time avg', numeric: true, format: dur },
      { key: 'self_device_ns', label: 'Self Device', numeric: true, format: dur },
      { key: 'self_device_pct', label: 'Self Device %', numeric: true, format: pct },
      { key: 'device_total_ns', label: 'Device total', numeric: true, format: dur },
      { key: 'device_avg_ns', label: 'Device time avg', numeric: true, format: dur },
      // Bytes allocated − freed on the device inside the op (torch's "CUDA Mem" / "Self CUDA Mem").
      ...(t.has_memory ? [
        { key: 'device_memory', label: 'Device Mem', numeric: true, format: mem, title: 'bytes allocated minus freed in the op and the ops inside it' },
        { key: 'self_device_memory', label: 'Self Device Mem', numeric: true, format: mem, title: 'bytes allocated minus freed in the op itself' },
      ] as Column<OpRow>[] : []),
      { key: 'calls', label: '# of Calls', numeric: true, format: (v) => formatCount(v as number) },
      { key: 'gbps', label: 'GB/s', numeric: true, format: (v) => (v as number) > 0 ? formatGBps(v as number) : '' },
      { key: 'gflops', label: 'GFLOP/s', numeric: true, format: (v) => (v as number) > 0 ? (v as number).toPrecision(3) : '' },
      { key: 'roofline_pct', label: '% Roofline', numeric: true, format: (v) => (v as number) > 0 ? `${(v as number).toFixed(1)}%` : '' },
    ],
    footer: `Self CPU time total: ${formatDuration(t.self_cpu_total_ns)} · Self Device time total: ${formatDuration(t.self_device_total_ns)}` +
      (t.dropped ? ` · <span class="warn">${formatCount(t.dropped)} events dropped</span>` : ''),
    onRow: (r) => go(`#/p/${id}/timeline?select=${encodeURIComponent(r.name)}`),
  });
}
