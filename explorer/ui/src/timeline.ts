// The timeline: lanes drawn on a canvas from level-of-detail windows the server sends.
// Mouse: wheel zooms about the pointer (shift+wheel pans), drag pans, click selects,
// shift+drag (or drag on the ruler) selects a time range, double-click zooms to an event.
// Keys: + / - zoom, arrows (or A / D) pan, 0 fits, Esc clears.
// Under the lanes, one memory track per device (allocated bytes, memory.ts) when the
// profile recorded the allocator; hovering it reads the bytes at the cursor.

import { api, type EventDetails, type Flow, type LaneWindow, type MemorySeries, type MemoryWindow, type SampleWindow, type Tracks } from './api';
import { eventColor, labelColor, layerSwatch, type Theme } from './colors';
import { formatDuration } from './format';
import { drawableAt, GROUP_GAP, layoutLanes, rowAt, type Layout } from './layout';
import { drawMemoryRow, peakLabel, readout } from './memory';
import { clampView, fitView, panBy, rulerTicks, timeToX, xToTime, zoomAt, type Bounds, type Viewport } from './viewport';

const GUTTER = 176;
const RULER = 28;
const PAD_RIGHT = 12;
const MEM_HEIGHT = 56;

export interface TimelineOptions {
  profile: number;
  tracks: Tracks;
  title?: string;
  onSelect?: (details: EventDetails | null) => void;
  onRange?: (range: [number, number] | null) => void;
  onView?: (v: Viewport) => void;
  extent?: number;  // at least this many ns from the start (aligns compared profiles)
  memory?: MemoryWindow;  // the whole profile's memory series: one track per device
}

interface MemoryRow { device: number; name: string; y: number; height: number }

interface ChainFlow { fromLane: number; fromT: number; toLane: number; toT: number }

export class Timeline {
  readonly el: HTMLElement;
  readonly bounds: Bounds;
  private canvas: HTMLCanvasElement;
  private tip: HTMLElement;
  private labels: string[] = [];
  private layout: Layout;
  view: Viewport;
  private windows = new Map<number, LaneWindow>();
  private fetched: { t0: number; t1: number; px: number } | null = null;
  private flows: Flow[] = [];
  private inflight = false;
  private dirty = false;
  highlight = new Set<number>();
  selected: number | null = null;
  private chainFlows: ChainFlow[] = [];
  range: [number, number] | null = null;
  private drag: { x: number; y: number; view: Viewport; mode: 'pan' | 'range'; moved: boolean } | null = null;
  private frame = 0;
  private resizeObs: ResizeObserver;
  private memRows: MemoryRow[] = [];
  private memory = new Map<number, MemorySeries>();
  private memPeakX = new Map<number, number | null>();
  // Instruction samples (instructions layer): ticks under each core's lane, coloured by op.
  private samples: SampleWindow | null = null;
  private sampleLane = new Map<number, number>();  // device core track -> its lane
  private hasSamples = true;
  ready = false;

  constructor(host: HTMLElement, private opts: TimelineOptions) {
    this.bounds = { begin: opts.tracks.t0, end: Math.max(opts.tracks.t1, opts.tracks.t0 + (opts.extent ?? 1)) };
    this.layout = layoutLanes(opts.tracks.lanes, RULER + 6);
    opts.tracks.lanes.forEach((l) => { if (l.layer === 'device' && l.depth === 0) this.sampleLane.set(l.track, l.lane); });
    let y = RULER + 6 + this.layout.height + GROUP_GAP;
    for (const s of opts.memory?.devices ?? []) {
      this.memRows.push({ device: s.device, name: s.name, y, height: MEM_HEIGHT });
      this.memory.set(s.device, s);
      y += MEM_HEIGHT + GROUP_GAP;
    }
    this.el = document.createElement('div');
    this.el.className = 'timeline';
    this.el.dataset.testid = 'timeline';
    this.el.dataset.profile = String(opts.profile);
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('aria-label', 'Timeline: wheel or +/- to zoom, drag or arrows to pan, click to select, shift+drag for a range');
    this.tip = document.createElement('div');
    this.tip.className = 'tooltip';
    this.el.append(this.canvas, this.tip);
    host.append(this.el);
    this.view = fitView(this.bounds, Math.max(100, host.clientWidth - GUTTER - PAD_RIGHT));
    this.bind();
    this.resizeObs = new ResizeObserver(() => this.resize());
    this.resizeObs.observe(this.el);
    this.resize();
  }

  // Set after construction when two timelines follow each other (compare view).
  setOnView(fn: (v: Viewport) => void): void { this.opts.onView = fn; }

  // Lanes per layer, for the end-to-end tests.
  laneCounts(): Record<string, number> {
    const c: Record<string, number> = {};
    for (const l of this.opts.tracks.lanes) c[l.layer] = (c[l.layer] ?? 0) + 1;
    return c;
  }

  destroy(): void { this.resizeObs.disconnect(); this.el.remove(); }

  private get plotWidth() { return Math.max(100, this.el.clientWidth - GUTTER - PAD_RIGHT); }

  private resize(): void {
    const w = this.el.clientWidth || 800;
    const h = RULER + 6 + this.layout.height + this.memRows.length * (MEM_HEIGHT + GROUP_GAP) + 10;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    const span = this.view.t1 - this.view.t0;
    this.view = { t0: this.view.t0, t1: this.view.t0 + span, width: this.plotWidth };
    this.changed(true);
  }

  // ---- view changes

  setView(v: Viewport, notify = true): void {
    this.view = clampView({ ...v, width: this.plotWidth }, this.bounds);
    this.changed(notify);
  }
  fit(): void { this.setView(fitView(this.bounds, this.plotWidth)); }
  zoomTo(t0: number, t1: number): void {
    const pad = Math.max((t1 - t0) * 0.15, 200);
    this.setView({ t0: t0 - pad, t1: t1 + pad, width: this.plotWidth });
  }

  private changed(notify: boolean): void {
    if (notify) this.opts.onView?.(this.view);
    this.requestDraw();
    this.requestFetch();
  }

  private requestDraw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  // Fetches a window wider than the view, so small pans draw from what is here.
  private requestFetch(): void {
    const v = this.view, span = v.t1 - v.t0;
    const f = this.fetched;
    const covered = f && f.t0 <= v.t0 && f.t1 >= v.t1 && Math.abs((f.t1 - f.t0) / f.px - span / v.width) / (span / v.width) < 0.35;
    if (covered) return;
    if (this.inflight) { this.dirty = true; return; }
    this.inflight = true;
    const t0 = v.t0 - span * 0.5, t1 = v.t1 + span * 0.5, px = Math.min(20000, Math.round(v.width * 2));
    const mem = this.memRows.length ? api.memory(this.opts.profile, t0, t1, v.width * 2) : Promise.resolve(null);
    const smp = this.hasSamples && this.sampleLane.size
      ? api.samples(this.opts.profile, t0, t1, Math.round(v.width * 8)).catch(() => { this.hasSamples = false; return null; })
      : Promise.resolve(null);
    Promise.all([api.timeline(this.opts.profile, t0, t1, px), mem, smp]).then(([w, m, sw]) => {
      this.samples = sw && sw.count ? sw : null;
      if (sw && !sw.count && this.samples === null && t0 <= this.bounds.begin && t1 >= this.bounds.end) this.hasSamples = false;
      for (const s of m?.devices ?? []) this.memory.set(s.device, s);
      this.windows.clear();
      for (const l of w.lanes) this.windows.set(l.lane, l);
      this.flows = w.flows;
      this.fetched = { t0, t1, px };
      this.ready = true;
      this.el.dataset.state = 'ready';
      this.requestDraw();
    }).catch((err) => {
      this.el.dataset.state = 'error';
      this.tip.textContent = String(err.message ?? err);
    }).finally(() => {
      this.inflight = false;
      if (this.dirty) { this.dirty = false; this.requestFetch(); }
    });
  }

  // ---- selection

  async select(e: number | null): Promise<void> {
    this.selected = e;
    if (e === null) {
      this.highlight.clear();
      this.chainFlows = [];
      this.opts.onSelect?.(null);
      this.requestDraw();
      return;
    }
    const d = await api.event(this.opts.profile, e);
    if (this.selected !== e) return;
    const c = d.chain;
    this.highlight = new Set([e, ...c.ops.map((x) => x.e), ...c.launches.map((x) => x.e), ...c.kernels.map((x) => x.e)]);
    const launchOf = new Map(c.launches.map((l) => [l.e, l]));
    this.chainFlows = [];
    for (const k of c.kernels) {
      const from = k.launch !== undefined ? launchOf.get(k.launch) : undefined;
      if (from) this.chainFlows.push({ fromLane: from.lane, fromT: from.t1, toLane: k.lane, toT: k.t0 });
    }
    this.el.dataset.highlighted = String(this.highlight.size);
    this.opts.onSelect?.(d);
    this.requestDraw();
  }

  highlightEvents(events: number[]): void {
    this.selected = null;
    this.chainFlows = [];
    this.highlight = new Set(events);
    this.el.dataset.highlighted = String(this.highlight.size);
    this.requestDraw();
  }

  setRange(r: [number, number] | null): void {
    this.range = r;
    this.opts.onRange?.(r);
    this.requestDraw();
  }

  // ---- input

  private bind(): void {
    const c = this.canvas;
    c.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const x = this.plotX(ev);
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
        this.setView(panBy(this.view, (ev.deltaX || ev.deltaY) * 0.8, this.bounds));
      } else {
        this.setView(zoomAt(this.view, Math.exp(ev.deltaY * 0.0018), x, this.bounds));
      }
    }, { passive: false });
    c.addEventListener('mousedown', (ev) => {
      c.focus();
      const y = this.localY(ev);
      const mode = ev.shiftKey || y < RULER ? 'range' : 'pan';
      this.drag = { x: ev.clientX, y: ev.clientY, view: this.view, mode, moved: false };
    });
    window.addEventListener('mousemove', (ev) => {
      if (!this.drag) { if (ev.target === c) this.hover(ev); return; }
      const dx = ev.clientX - this.drag.x;
      if (Math.abs(dx) + Math.abs(ev.clientY - this.drag.y) > 3) this.drag.moved = true;
      if (!this.drag.moved) return;
      if (this.drag.mode === 'pan') {
        this.setView(panBy(this.drag.view, -dx, this.bounds));
      } else {
        const a = xToTime(this.view, this.drag.x - c.getBoundingClientRect().left - GUTTER);
        const b = xToTime(this.view, this.plotX(ev));
        this.range = [Math.min(a, b), Math.max(a, b)];
        this.requestDraw();
      }
    });
    window.addEventListener('mouseup', (ev) => {
      const d = this.drag;
      this.drag = null;
      if (!d) return;
      if (d.mode === 'range' && d.moved && this.range) { this.setRange(this.range); return; }
      if (!d.moved && ev.target === c) this.click(ev);
    });
    c.addEventListener('dblclick', (ev) => {
      const hit = this.hit(ev);
      if (hit) this.zoomTo(hit.t0, hit.t1);
    });
    c.addEventListener('mouseleave', () => { this.tip.style.display = 'none'; });
    c.addEventListener('keydown', (ev) => {
      const w = this.view.width, mid = w / 2;
      const k = ev.key;
      if (k === '+' || k === '=' || k === 'w' || k === 'W') this.setView(zoomAt(this.view, 0.7, mid, this.bounds));
      else if (k === '-' || k === '_' || k === 's' || k === 'S') this.setView(zoomAt(this.view, 1 / 0.7, mid, this.bounds));
      else if (k === 'ArrowLeft' || k === 'a' || k === 'A') this.setView(panBy(this.view, -w * 0.15, this.bounds));
      else if (k === 'ArrowRight' || k === 'd' || k === 'D') this.setView(panBy(this.view, w * 0.15, this.bounds));
      else if (k === '0' || k === 'f') this.fit();
      else if (k === 'Escape') { this.select(null); this.setRange(null); }
      else return;
      ev.preventDefault();
    });
  }

  private localY(ev: MouseEvent) { return ev.clientY - this.canvas.getBoundingClientRect().top; }
  private plotX(ev: MouseEvent) { return ev.clientX - this.canvas.getBoundingClientRect().left - GUTTER; }

  private hit(ev: MouseEvent): { e: number; t0: number; t1: number; n: number; name: string; lane: number } | null {
    const row = rowAt(this.layout, this.localY(ev));
    const x = this.plotX(ev);
    if (!row || x < 0) return null;
    const w = this.windows.get(row.lane);
    if (!w) return null;
    const t = xToTime(this.view, x);
    const i = drawableAt(w, t, 3 * (this.view.t1 - this.view.t0) / this.view.width);
    if (i < 0) return null;
    return { e: w.e[i], t0: w.t0[i], t1: w.t1[i], n: w.n[i], name: this.opts.tracks.names[w.name[i]], lane: row.lane };
  }

  private click(ev: MouseEvent): void {
    const hit = this.hit(ev);
    if (!hit) { this.select(null); return; }
    if (hit.n > 1) { this.zoomTo(hit.t0, hit.t1); return; }  // a merged block: zoom into it
    this.select(hit.e);
  }

  private memRowAt(y: number): MemoryRow | null {
    return this.memRows.find((r) => y >= r.y && y < r.y + r.height) ?? null;
  }

  private hover(ev: MouseEvent): void {
    const mr = this.memRowAt(this.localY(ev));
    const series = mr ? this.memory.get(mr.device) : undefined;
    const memText = series && this.plotX(ev) >= 0 ? readout(series, xToTime(this.view, this.plotX(ev))) : null;
    const hit = memText ? null : this.hit(ev);
    if (memText) {
      this.tip.textContent = memText;
    } else if (hit) {
      const what = hit.n > 1 ? `${hit.n.toLocaleString('en-US')} events (${hit.name} …) · click to zoom` : hit.name;
      this.tip.textContent = `${what} · ${formatDuration(hit.t1 - hit.t0)}`;
    } else {
      this.tip.style.display = 'none';
      return;
    }
    const r = this.el.getBoundingClientRect();
    this.tip.style.display = 'block';
    this.tip.style.left = `${Math.min(ev.clientX - r.left + 12, r.width - 260)}px`;
    this.tip.style.top = `${ev.clientY - r.top + 14}px`;
  }

  // ---- drawing

  private draw(): void {
    this.labels = [];
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    const css = getComputedStyle(document.documentElement);
    const color = (name: string) => css.getPropertyValue(name).trim();
    const theme: Theme = document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light';
    const dpr = window.devicePixelRatio || 1;
    const W = this.canvas.width / dpr, H = this.canvas.height / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = color('--surface');
    ctx.fillRect(0, 0, W, H);
    const v = this.view;
    const X = (t: number) => GUTTER + timeToX(v, t);

    // Group bands and the ruler's grid.
    const ticks = rulerTicks(v, 110, this.bounds.begin);
    for (const r of this.layout.rows) {
      if (r.first) {
        const last = this.layout.rows.filter((x) => x.group === r.group).pop()!;
        ctx.fillStyle = color('--band');
        ctx.fillRect(0, r.y - 2, W, last.y + last.height - r.y + 4);
      }
    }
    ctx.fillStyle = color('--band');
    for (const r of this.memRows) ctx.fillRect(0, r.y - 2, W, r.height + 4);
    ctx.strokeStyle = color('--grid');
    ctx.lineWidth = 1;
    for (const tk of ticks) {
      const x = Math.round(GUTTER + tk.x) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, RULER); ctx.lineTo(x, H); ctx.stroke();
    }

    // Events.
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, RULER, W - GUTTER, H - RULER); ctx.clip();
    ctx.font = '11px ui-sans-serif, system-ui, -apple-system, "Segoe UI", sans-serif';
    ctx.textBaseline = 'middle';
    const dim = this.highlight.size > 0;
    const names = this.opts.tracks.names;
    const lanes = this.opts.tracks.lanes;
    for (const [lane, w] of this.windows) {
      const row = this.layout.byLane.get(lane);
      if (!row) continue;
      const layer = lanes[lane].layer;
      const y = row.y + 2, h = row.height - 4;
      for (let i = 0; i < w.t0.length; i++) {
        let x0 = X(w.t0[i]), x1 = X(w.t1[i]);
        if (x1 < GUTTER || x0 > W) continue;
        x0 = Math.max(x0, GUTTER - 2); x1 = Math.min(x1, W + 2);
        const width = Math.max(1, x1 - x0);
        const name = names[w.name[i]];
        const merged = w.n[i] > 1;
        const lit = this.highlight.has(w.e[i]);
        ctx.globalAlpha = dim && !lit ? 0.2 : merged ? 0.55 : 1;
        ctx.fillStyle = eventColor(layer, name, theme);
        ctx.fillRect(x0, y, width, h);
        if (lit) {
          ctx.globalAlpha = 1;
          ctx.strokeStyle = w.e[i] === this.selected ? color('--select') : color('--accent');
          ctx.lineWidth = w.e[i] === this.selected ? 2 : 1.5;
          ctx.strokeRect(x0 + 0.5, y + 0.5, Math.max(1, width - 1), h - 1);
        }
        if (!merged && width > 34) {
          ctx.globalAlpha = dim && !lit ? 0.35 : 1;
          ctx.fillStyle = labelColor(theme);
          const label = ellipsize(ctx, name, width - 8);
          ctx.fillText(label, Math.max(x0, GUTTER) + 4, y + h / 2 + 0.5);
          this.labels.push(label);
        }
      }
    }
    ctx.globalAlpha = 1;

    // Instruction samples: a tick at the bottom of its core's lane, in its op's colour.
    if (this.samples) {
      const sw = this.samples;
      for (let i = 0; i < sw.t.length; i++) {
        const row = this.layout.byLane.get(this.sampleLane.get(sw.track[i]) ?? -1);
        if (!row) continue;
        const x = X(sw.t[i]);
        if (x < GUTTER || x > W) continue;
        ctx.fillStyle = eventColor('framework', sw.ops[sw.op[i]] || '(no op)', theme);
        ctx.fillRect(x, row.y + row.height - 4, 1.5, 3);
      }
    }

    // Memory tracks: allocated bytes per device, the peak marked.
    const memColors = { line: color('--link'), peak: color('--select'), text: color('--fg') };
    for (const r of this.memRows) {
      const series = this.memory.get(r.device);
      this.memPeakX.set(r.device, series ? drawMemoryRow(ctx, series, v, GUTTER, r.y, r.height, memColors) : null);
    }
    ctx.globalAlpha = 1;

    // Flow arrows: the selection's chain, else the visible launches' (faint).
    const arrows: ChainFlow[] = this.chainFlows.length ? this.chainFlows
      : this.flows.length <= 64 ? this.flows.map((f) => ({ fromLane: f[2], fromT: f[3], toLane: f[4], toT: f[5] })) : [];
    ctx.strokeStyle = this.chainFlows.length ? color('--accent') : color('--flow');
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = this.chainFlows.length ? 1.4 : 1;
    for (const f of arrows) {
      const a = this.layout.byLane.get(f.fromLane), b = this.layout.byLane.get(f.toLane);
      if (!a || !b) continue;
      arrow(ctx, X(f.fromT), a.y + a.height - 3, X(f.toT), b.y + 3);
    }

    // The selected range.
    if (this.range) {
      const [a, b] = this.range;
      ctx.fillStyle = color('--range');
      ctx.fillRect(X(a), RULER, Math.max(1, X(b) - X(a)), H - RULER);
      ctx.strokeStyle = color('--accent');
      ctx.lineWidth = 1;
      for (const x of [X(a), X(b)]) { ctx.beginPath(); ctx.moveTo(x, RULER); ctx.lineTo(x, H); ctx.stroke(); }
    }
    ctx.restore();

    // Ruler.
    ctx.fillStyle = color('--surface-2');
    ctx.fillRect(0, 0, W, RULER);
    ctx.strokeStyle = color('--border');
    ctx.beginPath(); ctx.moveTo(0, RULER + 0.5); ctx.lineTo(W, RULER + 0.5); ctx.stroke();
    ctx.fillStyle = color('--muted');
    ctx.font = '11px ui-sans-serif, system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (const tk of ticks) {
      const x = GUTTER + tk.x;
      if (x < GUTTER || x > W) continue;
      ctx.fillRect(Math.round(x), RULER - 6, 1, 6);
      ctx.fillText(tk.label, x + 4, RULER / 2);
    }
    if (this.range) {
      const [a, b] = this.range;
      const label = `◀ ${formatDuration(b - a)} ▶`;
      ctx.fillStyle = color('--accent');
      ctx.font = '600 11px ui-sans-serif, system-ui, sans-serif';
      ctx.fillText(label, Math.max(GUTTER + 4, (X(a) + X(b)) / 2 - ctx.measureText(label).width / 2), RULER / 2);
    }

    // Gutter: group names with their layer's colour.
    ctx.fillStyle = color('--surface');
    ctx.fillRect(0, RULER + 1, GUTTER - 1, H - RULER);
    ctx.fillStyle = color('--surface-2');
    ctx.fillRect(0, 0, GUTTER - 1, RULER);
    ctx.fillStyle = color('--muted');
    ctx.font = '600 11px ui-sans-serif, system-ui, sans-serif';
    ctx.fillText(this.opts.title ?? 'time', 12, RULER / 2);
    ctx.strokeStyle = color('--border');
    ctx.beginPath(); ctx.moveTo(GUTTER - 0.5, 0); ctx.lineTo(GUTTER - 0.5, H); ctx.stroke();
    for (const r of this.layout.rows) {
      if (!r.first) continue;
      ctx.fillStyle = layerSwatch(r.layer, theme);
      const rows = this.layout.rows.filter((x) => x.group === r.group);
      const bottom = rows[rows.length - 1].y + rows[rows.length - 1].height;
      ctx.fillRect(6, r.y + 2, 3, bottom - r.y - 4);
      ctx.fillStyle = color('--fg');
      ctx.font = '12px ui-sans-serif, system-ui, sans-serif';
      const label = ellipsize(ctx, r.group, GUTTER - 24);
      ctx.fillText(label, 16, r.y + r.height / 2);
      this.labels.push(label);
    }
    for (const r of this.memRows) {
      const series = this.memory.get(r.device);
      ctx.fillStyle = color('--link');
      ctx.fillRect(6, r.y + 2, 3, r.height - 4);
      ctx.fillStyle = color('--fg');
      ctx.font = '12px ui-sans-serif, system-ui, sans-serif';
      ctx.fillText(ellipsize(ctx, `${r.name} memory`, GUTTER - 24), 16, r.y + 12);
      if (series) {
        ctx.fillStyle = color('--muted');
        ctx.font = '11px ui-sans-serif, system-ui, sans-serif';
        ctx.fillText(ellipsize(ctx, peakLabel(series.peak), GUTTER - 24), 16, r.y + 28);
      }
    }
  }

  // The memory tracks as drawn, for the end-to-end tests: where the peak marker is
  // (null: outside the view) and the series' size.
  memoryState(): { device: number; name: string; points: number; peakLabel: string; peakX: number | null; y: number }[] {
    const rect = this.canvas.getBoundingClientRect();
    return this.memRows.map((r) => {
      const s = this.memory.get(r.device);
      const x = this.memPeakX.get(r.device);
      return {
        device: r.device, name: r.name, points: s?.t.length ?? 0, peakLabel: s ? peakLabel(s.peak) : '',
        peakX: x === undefined || x === null ? null : rect.left + x, y: rect.top + r.y + r.height / 2,
      };
    });
  }

  // ---- hooks for the end-to-end tests: where a drawable is, what is highlighted.

  locate(name: string, layer: string): { x: number; y: number } | null {
    const rect = this.canvas.getBoundingClientRect();
    for (const [lane, w] of this.windows) {
      if (this.opts.tracks.lanes[lane].layer !== layer) continue;
      const row = this.layout.byLane.get(lane)!;
      for (let i = 0; i < w.t0.length; i++) {
        if (w.n[i] !== 1 || this.opts.tracks.names[w.name[i]] !== name) continue;
        const x0 = Math.max(GUTTER + timeToX(this.view, w.t0[i]), GUTTER), x1 = Math.min(GUTTER + timeToX(this.view, w.t1[i]), rect.width);
        if (x1 - x0 < 2) continue;
        return { x: rect.left + (x0 + x1) / 2, y: rect.top + row.y + row.height / 2 };
      }
    }
    return null;
  }

  // The text of the event and track labels the last frame drew (on the canvas: text, never markup).
  drawnLabels(): string[] { return [...this.labels]; }

  highlightedOn(layer: string): number {
    let n = 0;
    for (const [lane, w] of this.windows)
      if (this.opts.tracks.lanes[lane].layer === layer) for (const e of w.e) if (this.highlight.has(e)) n++;
    return n;
  }
}

function ellipsize(ctx: CanvasRenderingContext2D, s: string, max: number): string {
  if (ctx.measureText(s).width <= max) return s;
  let lo = 0, hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(s.slice(0, mid) + '…').width <= max) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? s.slice(0, lo) + '…' : '';
}

function arrow(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  const my = (y0 + y1) / 2;
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.bezierCurveTo(x0, my, x1, my, x1, y1);
  ctx.stroke();
  const s = 4;
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - s, y1 - s * 1.4);
  ctx.lineTo(x1 + s, y1 - s * 1.4);
  ctx.closePath();
  ctx.fill();
}
