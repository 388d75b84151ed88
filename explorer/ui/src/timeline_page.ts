// The timeline view: toolbar, the canvas timeline, and the side panel (details of the
// selected event, or statistics of the selected range).
import { api, type EventBrief, type EventDetails } from './api';
import { renderDetails, renderRange } from './details';
import { escapeHtml as h } from './format';
import { Timeline } from './timeline';
import { zoomAt } from './viewport';

export interface TimelineRequest { id: number; select?: string; event?: number; events?: number[] }

export async function renderTimelinePage(host: HTMLElement, req: TimelineRequest, label: string): Promise<Timeline> {
  // The memory tracks need the devices up front (they size the canvas); a profile
  // without allocator events has none.
  const [tracks, memory] = await Promise.all([api.tracks(req.id), api.memory(req.id).catch(() => undefined)]);
  const legend = (['framework', 'runtime', 'device'] as const)
    .map((l) => `<span class="legend"><span class="dot dot-${l}"></span>${l}</span>`).join('');
  host.innerHTML = `
    <section class="page timeline-page">
      <div class="toolbar">
        <h1>${h(label)}</h1>
        <div class="legend-group">${legend}</div>
        <div class="spacer"></div>
        <span class="muted small hint">wheel / + − zoom · drag / ← → pan · shift+drag range · click select</span>
        <div class="button-group">
          <button class="button" data-act="out" title="Zoom out (−)">−</button>
          <button class="button" data-act="in" title="Zoom in (+)">+</button>
          <button class="button" data-act="fit" title="Fit (0)">Fit</button>
        </div>
      </div>
      <div class="split">
        <div class="timeline-host"></div>
        <aside class="side-panel" data-testid="side-panel"><p class="muted hint-panel">Click an event to follow it across the layers: a framework op highlights its launches and kernels; a kernel highlights its launch and op.<br><br>Shift+drag (or drag on the ruler) to measure a range.</p></aside>
      </div>
    </section>`;
  const panel = host.querySelector<HTMLElement>('.side-panel')!;
  const tl = new Timeline(host.querySelector<HTMLElement>('.timeline-host')!, {
    profile: req.id, tracks, memory, title: 'time',
    onSelect: (d) => {
      if (!d) return;
      renderDetails(panel, d, (e) => { tl.select(e); revealBrief(tl, d.chain, e); });
      revealChain(tl, d);
    },
    onRange: async (r) => { if (r) renderRange(panel, await api.range(req.id, r[0], r[1])); },
  });
  host.querySelectorAll<HTMLButtonElement>('[data-act]').forEach((b) => b.addEventListener('click', () => {
    const mid = tl.view.width / 2;
    if (b.dataset.act === 'in') tl.setView(zoomAt(tl.view, 0.6, mid, tl.bounds));
    else if (b.dataset.act === 'out') tl.setView(zoomAt(tl.view, 1 / 0.6, mid, tl.bounds));
    else tl.fit();
  }));
  (window as unknown as { __opscope: unknown }).__opscope = { timelines: [tl] };

  if (req.select) {
    const found = await api.search(req.id, req.select, true, 5000);
    tl.highlightEvents(found.events.map((e) => e.e));
    if (found.events.length) zoomToAll(tl, found.events);
    panel.innerHTML = `<div class="panel-head"><div><div class="title">${h(req.select)}</div><div class="muted">${found.total} events highlighted${found.truncated ? ' (first 5000)' : ''}</div></div></div>`;
  } else if (req.events?.length || req.event !== undefined) {
    const first = req.event ?? req.events![0];
    const d = await api.event(req.id, first);
    if (req.events && req.events.length > 1) {
      tl.highlightEvents(req.events);
      const briefs = await Promise.all(req.events.slice(0, 20).map((e) => api.event(req.id, e)));
      zoomToAll(tl, briefs);
      renderDetails(panel, d, (e) => tl.select(e));
    } else {
      tl.zoomTo(d.t0, d.t1);
      await tl.select(first);
    }
  }
  return tl;
}

function zoomToAll(tl: Timeline, events: { t0: number; t1: number }[]): void {
  let a = Infinity, b = -Infinity;
  for (const e of events) { a = Math.min(a, e.t0); b = Math.max(b, e.t1); }
  tl.zoomTo(a, b);
}

// A selected op's kernels run after it returns, often behind earlier kernels, and a
// kernel's op ran before it: when part of the chain is off screen, widen the view to take
// in the event, its launches, its kernels and its op (not the enclosing ranges).
function revealChain(tl: Timeline, d: EventDetails): void {
  const evs = [d, ...d.chain.launches, ...d.chain.kernels, ...d.chain.ops.filter((o) => o.kind === 'op')];
  let a = Infinity, b = -Infinity;
  for (const e of evs) { a = Math.min(a, e.t0); b = Math.max(b, e.t1); }
  if (a >= tl.view.t0 && b <= tl.view.t1) return;
  const pad = (b - a) * 0.15;
  tl.zoomTo(a - pad, b + pad);
}

// Picking an event from the chain list: bring it into view if it is off screen.
function revealBrief(tl: Timeline, chain: { ops: EventBrief[]; launches: EventBrief[]; kernels: EventBrief[] }, e: number): void {
  const b = [...chain.ops, ...chain.launches, ...chain.kernels].find((x) => x.e === e);
  if (b && (b.t1 < tl.view.t0 || b.t0 > tl.view.t1)) tl.zoomTo(b.t0, b.t1);
}
