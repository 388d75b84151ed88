// The side panel: an event's details (args, shapes, source, the correlation chain, a
// compiled kernel's artifact) or a selected range's aggregate statistics.
import type { EventBrief, EventDetails, RangeStats } from './api';
import { escapeHtml as h, formatBytes, formatCount, formatDuration, formatGBps } from './format';

const chip = (layer: EventBrief['layer']) =>
  `<span class="dot dot-${h(layer)}"></span>`;

function chainList(title: string, items: EventBrief[], selected: number): string {
  if (!items.length) return '';
  const shown = items.slice(0, 40);
  return `<h4>${title} <span class="muted">${items.length}</span></h4><ul class="chain">` + shown.map((x) =>
    `<li><a href="#" data-e="${x.e}" class="${x.e === selected ? 'current' : ''}">${chip(x.layer)}${h(x.name)}</a><span class="muted">${formatDuration(x.t1 - x.t0)}</span></li>`,
  ).join('') + (items.length > shown.length ? `<li class="muted">… ${items.length - shown.length} more</li>` : '') + '</ul>';
}

// The kernel view of this profile's kernel (the instructions layer's samples).
function kernelLink(name: string): string {
  const id = /^#\/p\/(\d+)/.exec(location.hash)?.[1] ?? '0';
  return `#/p/${id}/kernel?${new URLSearchParams({ name })}`;
}

export function renderDetails(host: HTMLElement, d: EventDetails, onPick: (e: number) => void): void {
  const args = Object.entries(d.args).map(([k, v]) => {
    const text = k === 'bytes' || k === 'allocated_after' ? formatBytes(v) : k === 'gbps' ? formatGBps(v)
      : k.endsWith('_ns') ? formatDuration(v) : formatCount(v);
    return `<tr><th>${h(k)}</th><td>${text}</td></tr>`;
  }).join('');
  const artifact = d.artifact ? `
    <h4>Compiled artifact</h4>
    ${d.artifact.manifest ? `<pre class="code small">${h(JSON.stringify(d.artifact.manifest, null, 2))}</pre>` : ''}
    ${d.artifact.source ? `<pre class="code">${h(d.artifact.source)}</pre>` : ''}` : '';
  host.innerHTML = `
    <div class="panel-head">${chip(d.layer)}<div><div class="title" data-testid="details-name">${h(d.name)}</div>
      <div class="muted">${h(d.kind)} · ${h(d.layer)} · ${h(d.track_name)}</div></div></div>
    <table class="kv">
      <tr><th>start</th><td>${formatDuration(d.t0)}</td></tr>
      <tr><th>duration</th><td>${formatDuration(d.dur_ns)}</td></tr>
      ${d.kind === 'op' || d.kind === 'range' ? `<tr><th>correlation id</th><td>${d.id}</td></tr>` : ''}
      ${d.kind === 'launch' || d.kind === 'kernel' ? `<tr><th>launch id</th><td>${d.id}</td></tr>` : ''}
      ${d.stream >= 0 ? `<tr><th>stream</th><td>${d.stream}</td></tr>` : ''}
      ${args}
      ${d.shapes ? `<tr><th>input shapes</th><td><code>${h(d.shapes)}</code></td></tr>` : ''}
      ${d.source ? `<tr><th>source</th><td><code>${h(d.source)}</code></td></tr>` : ''}
    </table>
    <h3>Correlation chain</h3>
    <p class="muted small">framework op → runtime launches → kernels on the device cores</p>
    ${chainList('Framework ops', d.chain.ops, d.e)}
    ${chainList('Launches', d.chain.launches, d.e)}
    ${chainList('Kernels', d.chain.kernels, d.e)}
    ${d.chain.truncated ? '<p class="muted small">Chain truncated.</p>' : ''}
    ${artifact}
    ${d.kind === 'kernel' || d.kind === 'launch' ? `<p class="small"><a href="${kernelLink(d.name)}" data-testid="kernel-link">Inside the kernel: hot source lines and instructions →</a></p>` : ''}`;
  host.querySelectorAll<HTMLAnchorElement>('a[data-e]').forEach((a) =>
    a.addEventListener('click', (ev) => { ev.preventDefault(); onPick(Number(a.dataset.e)); }));
}

export function renderRange(host: HTMLElement, r: RangeStats): void {
  const layer = (k: 'framework' | 'runtime' | 'device') =>
    `<tr><th>${chip(k)} ${k}</th><td>${formatCount(r.layers[k].events)} events</td><td>${formatDuration(r.layers[k].busy_ns)}</td></tr>`;
  host.innerHTML = `
    <div class="panel-head"><div><div class="title" data-testid="range-title">Selected range</div>
      <div class="muted">${formatDuration(r.t0)} → ${formatDuration(r.t1)} · ${formatDuration(r.duration_ns)}</div></div></div>
    <table class="kv">${layer('framework')}${layer('runtime')}${layer('device')}
      <tr><th>kernel bytes</th><td colspan="2">${formatBytes(r.kernel_bytes)}</td></tr></table>
    <h4>Top names <span class="muted">${r.distinct_names}</span></h4>
    <table class="data compact"><thead><tr><th>name</th><th class="num">count</th><th class="num">time</th></tr></thead><tbody>
    ${r.names.map((n) => `<tr><td>${chip(n.layer)}${h(n.name)}</td><td class="num">${formatCount(n.count)}</td><td class="num">${formatDuration(n.time_ns)}</td></tr>`).join('')}
    </tbody></table>`;
}
