// The explorer's front end: routes between the profiles, summary, timeline, operator
// table and compare views, and runs the header's search.
import './styles.css';
import { api, ApiError, type ProfileEntry } from './api';
import { renderCompare } from './compare';
import { renderKernel } from './kernel';
import { escapeHtml as h, formatDuration } from './format';
import { parseRoute, routeHash, type Route } from './route';
import { initTheme } from './theme';
import { renderTimelinePage } from './timeline_page';
import type { Timeline } from './timeline';
import { renderOps, renderProfiles, renderSummary } from './views';

const app = document.getElementById('app')!;
let profiles: ProfileEntry[] = [];
let timelines: Timeline[] = [];
let current: Route = { view: 'profiles' };

const go = (hash: string) => { location.hash = hash; };

function renderTabs(r: Route): void {
  const nav = document.querySelector('.tabs')!;
  const id = 'id' in r ? r.id : profiles.find((p) => p.ok)?.id;
  const tab = (href: string, label: string, active: boolean) =>
    `<a href="${href}" class="${active ? 'active' : ''}"${active ? ' aria-current="page"' : ''}>${label}</a>`;
  const ok = profiles.filter((p) => p.ok);
  nav.innerHTML = [
    tab('#/', 'Profiles', r.view === 'profiles'),
    id !== undefined ? tab(`#/p/${id}/summary`, 'Summary', r.view === 'summary') : '',
    id !== undefined ? tab(`#/p/${id}/timeline`, 'Timeline', r.view === 'timeline') : '',
    id !== undefined ? tab(`#/p/${id}/ops`, 'Operators', r.view === 'ops') : '',
    id !== undefined ? tab(`#/p/${id}/kernel`, 'Kernels', r.view === 'kernel') : '',
    ok.length >= 2 ? tab(r.view === 'compare' ? routeHash(r) : `#/compare/${ok[0].id}/${ok[ok.length - 1].id}`, 'Compare', r.view === 'compare') : '',
  ].join('');
  const label = 'id' in r ? profiles[r.id]?.label : undefined;
  if (label) nav.insertAdjacentHTML('beforeend', `<span class="current-profile" title="current profile">${h(label)}</span>`);
}

async function render(): Promise<void> {
  const r = parseRoute(location.hash);
  current = r;
  timelines.forEach((t) => t.destroy());
  timelines = [];
  renderTabs(r);
  app.innerHTML = '<p class="loading muted">Loading…</p>';
  try {
    if (r.view === 'profiles') renderProfiles(app, profiles, go);
    else if (r.view === 'compare') timelines = await renderCompare(app, r.a, r.b, profiles, go);
    else {
      const p = profiles[r.id];
      if (!p) throw new Error(`No profile ${r.id}.`);
      if (!p.ok) throw new Error(`${p.label} could not be loaded: ${p.error}`);
      if (r.view === 'summary') renderSummary(app, r.id, await api.summary(r.id), go);
      else if (r.view === 'ops') await renderOps(app, r.id, go);
      else if (r.view === 'kernel') await renderKernel(app, r.id, r.name, r.op);
      else timelines = [await renderTimelinePage(app, r, p.label)];
    }
  } catch (err) {
    app.innerHTML = `<section class="page"><div class="card error"><h2>Something went wrong</h2><p>${h(String((err as Error).message ?? err))}</p><p><a href="#/">Back to the profiles</a></p></div></section>`;
  }
}

// Search: names matching the query in the current profile; pick one to see its events.
function initSearch(): void {
  const input = document.getElementById('search') as HTMLInputElement;
  const box = document.querySelector<HTMLElement>('.search-results')!;
  let seq = 0;
  const run = async () => {
    const q = input.value.trim();
    const id = 'id' in current ? current.id : profiles.find((p) => p.ok)?.id;
    if (!q || id === undefined) { box.hidden = true; return; }
    const mine = ++seq;
    try {
      const res = await api.search(id, q, false, 30);
      if (mine !== seq) return;
      box.innerHTML = res.names.length
        ? `<div class="muted small head">${res.total.toLocaleString('en-US')} events in ${h(profiles[id].label)}</div>` +
          res.names.slice(0, 12).map((n) => `<a href="#/p/${id}/timeline?select=${encodeURIComponent(n.name)}"><span>${h(n.name)}</span><span class="muted">${n.count}</span></a>`).join('') +
          '<div class="muted small head">first events</div>' +
          res.events.slice(0, 8).map((e) => `<a href="#/p/${id}/timeline?event=${e.e}"><span>${h(e.name)} <span class="muted">${e.kind}</span></span><span class="muted">${formatDuration(e.t0)}</span></a>`).join('')
        : '<div class="muted small head">No match.</div>';
      box.hidden = false;
    } catch (err) {
      box.innerHTML = `<div class="small head">${h(String((err as Error).message))}</div>`;
      box.hidden = false;
    }
  };
  let timer = 0;
  input.addEventListener('input', () => { clearTimeout(timer); timer = window.setTimeout(run, 150); });
  input.form!.addEventListener('submit', (ev) => { ev.preventDefault(); run(); });
  box.addEventListener('click', () => { box.hidden = true; });
  document.addEventListener('click', (ev) => { if (!input.form!.contains(ev.target as Node)) box.hidden = true; });
}

async function start(): Promise<void> {
  initTheme(() => { if (timelines.length) timelines.forEach((t) => t.setView(t.view, false)); else render(); });
  initSearch();
  try {
    profiles = (await api.profiles()).profiles;
  } catch (err) {
    const text = err instanceof ApiError && err.status === 401
      ? 'This explorer serves a network address and needs its access token: open the URL that <code>opscope explore</code> printed (it ends in <code>?token=…</code>).'
      : h(String(err));
    app.innerHTML = `<section class="page"><div class="card error" data-testid="server-error"><h2>Cannot reach the explorer's server</h2><p>${text}</p></div></section>`;
    return;
  }
  window.addEventListener('hashchange', render);
  render();
}

start();
