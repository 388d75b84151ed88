// Inside a kernel (the instructions layer): the kernel's source lines and its assembly
// side by side, each coloured by its share of the kernel's samples. Picking a source line
// marks the instructions it compiled to; picking an instruction marks its line. Without
// a kernel name: the hottest source lines of the whole profile, each linked to its kernel.
// Styles are set from script (no inline style or script in the markup: the server's CSP).
import { getJSON } from './api';
import { escapeHtml as h, formatCount, formatDuration } from './format';

interface SourceRow { file: string; line: number; samples: number; text: string; function: string }
interface Instr { address: string; text: string; class: string; width: string; samples: number; file: string; line: number; function: string }
interface FileLines { file: string; found: boolean; lines: { line: number; text: string; samples: number }[] }
export interface KernelView {
  kernel: string; op: string; samples: number; est_ns: number;
  sampling: { event: string; rate_hz: number; lost: number; dropped: number };
  source: SourceRow[]; instructions: Instr[]; files: FileLines[];
  classes: Record<string, number>; widths: Record<string, number>; classified: number;
  cores: { track: number; name: string; samples: number }[]; imbalance: number;
  functions: { name: string; samples: number }[]; notes: string[];
  static: StaticKernel[] | null;
}
// The kernel's code analysed without running it (`opscope kernel --static`).
interface StaticLoop {
  head: string; file: string; lines: [number, number]; instructions: number; widest: string; elements: number;
  loads_per_element: number; stores_per_element: number; bytes_per_element: number; stack_accesses: number;
  remainder: boolean; samples: number;
}
interface StaticKernel {
  kernel: string; loops: StaticLoop[]; bytes_per_element: number; recorded_bytes_per_element: number;
  verdicts: { rule: string; severity: string; message: string }[]; notes: string[];
}
interface LineRow { file: string; line: number; function: string; kernel: string; op: string; samples: number; share: number; est_ns: number; text: string }

const P = (id: number) => `/api/profiles/${id}`;
export const kernelApi = {
  kernel: (id: number, name: string, op?: string) => getJSON<KernelView>(`${P(id)}/kernel`, op ? { name, op } : { name }),
  lines: (id: number, limit = 100) => getJSON<{ total_samples: number; rows: LineRow[] }>(`${P(id)}/lines`, { limit }),
};

export function kernelHash(id: number, name: string, op?: string): string {
  const q = new URLSearchParams({ name });
  if (op) q.set('op', op);
  return `#/p/${id}/kernel?${q}`;
}

const pct = (n: number, total: number) => (total ? `${(100 * n / total).toFixed(1)}%` : '');
const base = (f: string) => f.split('/').slice(-3).join('/');
const lineKey = (file: string, line: number) => `${file}:${line}`;

// Heat as a background: the share of the hottest row sets the alpha.
function paintHeat(root: HTMLElement): void {
  root.querySelectorAll<HTMLElement>('[data-heat]').forEach((el) => {
    const a = Number(el.dataset.heat);
    if (a > 0) el.style.background = `rgba(230, 90, 40, ${(0.12 + 0.6 * a).toFixed(3)})`;
  });
}

const fig = (x: number, digits = 2) => (x < 0 ? '?' : x.toFixed(digits));

// The verdicts, then each loop: its lines, width, elements an iteration and bytes per element.
function staticCard(ks: StaticKernel[] | null): string {
  if (!ks || !ks.length) return '';
  return ks.map((k) => `<div class="card" data-testid="kernel-static"><h3>Its code, analysed without running it</h3>
    <ul>${k.verdicts.map((v) => `<li class="${v.severity === 'warn' ? 'warn' : ''}">${h(v.message)} <span class="muted">[${h(v.rule)}]</span></li>`).join('')}</ul>
    <p class="small">Bytes per element: ${fig(k.bytes_per_element, 1)} in the main loops${k.recorded_bytes_per_element > 0 ? `, ${fig(k.recorded_bytes_per_element, 1)} recorded by its launches` : ''}</p>
    <table class="small"><tr><th>loop</th><th>lines</th><th>width</th><th>elements / iter</th><th>loads / elem</th><th>stores / elem</th><th>B / elem</th><th>stack</th><th>samples</th></tr>
    ${k.loops.map((l) => `<tr><td>${l.remainder ? 'tail' : 'main'} ${h(l.head)}</td><td>${h(l.file.split('/').pop() ?? '')}:${l.lines[0]}-${l.lines[1]}</td><td>${h(l.widest)}</td>
      <td class="num">${fig(l.elements, 0)}</td><td class="num">${fig(l.loads_per_element)}</td><td class="num">${fig(l.stores_per_element)}</td>
      <td class="num">${fig(l.bytes_per_element, 1)}</td><td class="num">${l.stack_accesses}</td><td class="num">${l.samples < 0 ? '' : formatCount(l.samples)}</td></tr>`).join('')}
    </table>${k.notes.map((n) => `<p class="small warn">${h(n)}</p>`).join('')}</div>`).join('');
}

export async function renderKernel(host: HTMLElement, id: number, name: string | undefined, op: string | undefined): Promise<void> {
  if (!name) return renderLines(host, id);
  const k = await kernelApi.kernel(id, name, op);
  const hottest = Math.max(1, ...k.source.map((s) => s.samples));
  const hotInstr = Math.max(1, ...k.instructions.map((i) => i.samples));
  const widths = ['512', '256', '128', 'scalar'].map((w) => `${w === 'scalar' ? 'scalar' : w + '-bit'} ${pct(k.widths[w] ?? 0, k.classified) || '0%'}`).join(' · ');
  const classes = Object.entries(k.classes).sort((a, b) => b[1] - a[1]).map(([c, n]) => `${h(c)} ${pct(n, k.classified)}`).join(' · ');
  const src = k.files.map((f) => `
    <div class="kfile"><div class="kfile-name" title="${h(f.file)}">${h(base(f.file))}${f.found ? '' : ' <span class="muted">(source not found)</span>'}</div>
    <table class="klines">${f.lines.map((l) => `
      <tr data-key="${h(lineKey(f.file, l.line))}" data-heat="${(l.samples / hottest).toFixed(3)}" class="kline${l.samples ? ' hot' : ''}">
        <td class="num muted">${l.samples ? pct(l.samples, k.samples) : ''}</td><td class="num muted">${l.line}</td><td><code>${h(l.text)}</code></td></tr>`).join('')}
    </table></div>`).join('');
  let fn = '';
  const asm = k.instructions.map((i) => {
    const head = i.function !== fn ? `<tr class="kfn"><td colspan="5">${h(i.function)}</td></tr>` : '';
    fn = i.function;
    return `${head}<tr data-key="${h(lineKey(i.file, i.line))}" data-heat="${(i.samples / hotInstr).toFixed(3)}" class="kinstr${i.samples ? ' hot' : ''}" title="${h(i.file ? `${base(i.file)}:${i.line}` : 'no line')}">
      <td class="num muted">${i.samples ? pct(i.samples, k.samples) : ''}</td><td class="muted">${h(i.address)}</td>
      <td><code>${h(i.text)}</code></td><td class="muted">${h(i.class)}</td><td class="muted">${h(i.width)}</td></tr>`;
  }).join('');
  host.innerHTML = `<section class="page kernel-view" data-testid="kernel-view">
    <div class="card"><h2>${h(k.kernel)}${k.op ? ` <span class="muted">under ${h(k.op)}</span>` : ''}</h2>
      <p>${formatCount(k.samples)} samples (${h(k.sampling.event)}, ${formatCount(k.sampling.rate_hz)} Hz per core) ≈ ${formatDuration(k.est_ns)} of core time${k.sampling.lost || k.sampling.dropped ? ` · ${formatCount(k.sampling.lost)} lost, ${formatCount(k.sampling.dropped)} dropped` : ''}</p>
      <p class="small">Vector width: ${widths} · ${classes}</p>
      <p class="small">Cores: ${k.cores.map((c) => `${h(c.name)} ${formatCount(c.samples)}`).join(' · ')} · imbalance ${k.imbalance.toFixed(2)}</p>
      ${k.notes.map((n) => `<p class="small warn">${h(n)}</p>`).join('')}
      <p class="small"><a href="#/p/${id}/kernel">All hot lines</a></p></div>
    ${staticCard(k.static)}
    <div class="kernel-panes">
      <div class="card kpane" data-testid="kernel-source"><h3>Source</h3>${src || '<p class="muted">No line table: assembly only.</p>'}</div>
      <div class="card kpane" data-testid="kernel-asm"><h3>Assembly</h3><table class="kasm">${asm || '<tr><td class="muted">No instructions (see the notes).</td></tr>'}</table></div>
    </div></section>`;
  paintHeat(host);
  // Linked both ways: a row of either pane marks the rows of the same line in both.
  const rows = Array.from(host.querySelectorAll<HTMLElement>('tr[data-key]'));
  const pick = (key: string, from: HTMLElement) => {
    rows.forEach((r) => r.classList.toggle('linked', r.dataset.key === key));
    const other = rows.find((r) => r.dataset.key === key && r.closest('.kpane') !== from.closest('.kpane'));
    other?.scrollIntoView({ block: 'nearest' });
  };
  rows.forEach((r) => r.addEventListener('click', () => pick(r.dataset.key!, r)));
  const first = rows.find((r) => r.classList.contains('kline') && r.classList.contains('hot'));
  if (first) pick(first.dataset.key!, first);
}

async function renderLines(host: HTMLElement, id: number): Promise<void> {
  const l = await kernelApi.lines(id, 100);
  const hottest = Math.max(1, ...l.rows.map((r) => r.samples));
  host.innerHTML = `<section class="page" data-testid="lines-view"><div class="card">
    <h2>Hottest source lines <span class="muted">${formatCount(l.total_samples)} samples</span></h2>
    <p class="muted small">key_averages per source line: pick a kernel to see its source and assembly.</p>
    <table class="data"><thead><tr><th class="num">share</th><th class="num">time</th><th>line</th><th>kernel</th><th>op</th><th>source</th></tr></thead><tbody>
    ${l.rows.map((r) => `<tr data-heat="${(r.samples / hottest).toFixed(3)}"><td class="num">${(100 * r.share).toFixed(1)}%</td><td class="num">${formatDuration(r.est_ns)}</td>
      <td title="${h(r.file)}">${h(r.file ? `${base(r.file)}:${r.line}` : r.function)}</td>
      <td><a href="${kernelHash(id, r.kernel, r.op || undefined)}">${h(r.kernel)}</a></td><td>${h(r.op || '-')}</td><td><code>${h(r.text.trim())}</code></td></tr>`).join('')}
    </tbody></table></div></section>`;
  paintHeat(host);
}
