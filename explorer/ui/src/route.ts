// Hash routes: #/ (profiles), #/p/ID/summary|timeline|ops[?select=NAME|event=N|t0=A&t1=B],
// #/compare/A/B, #/p/ID/kernel[?name=KERNEL&op=OP] (inside a kernel; without a name, the
// hottest lines).

export type Route =
  | { view: 'profiles' }
  | { view: 'summary' | 'timeline' | 'ops'; id: number; select?: string; event?: number; events?: number[]; t0?: number; t1?: number }
  | { view: 'compare'; a: number; b: number }
  | { view: 'kernel'; id: number; name?: string; op?: string };

export function parseRoute(hash: string): Route {
  const [path, query = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  const params = new URLSearchParams(query);
  const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : NaN);
  if (parts[0] === 'p' && Number.isFinite(num(parts[1])) && parts[2] === 'kernel') {
    const r: Route = { view: 'kernel', id: num(parts[1]) };
    const name = params.get('name'), op = params.get('op');
    if (name) r.name = name;
    if (op) r.op = op;
    return r;
  }
  if (parts[0] === 'p' && Number.isFinite(num(parts[1]))) {
    const view = parts[2] === 'summary' || parts[2] === 'ops' ? parts[2] : 'timeline';
    const r: Route = { view, id: num(parts[1]) };
    const sel = params.get('select');
    if (sel) r.select = sel;
    const ev = num(params.get('event') ?? undefined);
    if (Number.isFinite(ev)) r.event = ev;
    const evs = params.get('events');
    if (evs) r.events = evs.split(',').map(Number).filter((x) => Number.isInteger(x) && x >= 0);
    // A time range (ns): both ends, in order.
    const time = (s: string | null) => (s !== null && /^-?\d+$/.test(s) ? Number(s) : NaN);
    const t0 = time(params.get('t0')), t1 = time(params.get('t1'));
    if (Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0) { r.t0 = t0; r.t1 = t1; }
    return r;
  }
  if (parts[0] === 'compare' && Number.isFinite(num(parts[1])) && Number.isFinite(num(parts[2])))
    return { view: 'compare', a: num(parts[1]), b: num(parts[2]) };
  return { view: 'profiles' };
}

export function routeHash(r: Route): string {
  switch (r.view) {
    case 'profiles': return '#/';
    case 'compare': return `#/compare/${r.a}/${r.b}`;
    case 'kernel': {
      const q = new URLSearchParams();
      if (r.name) q.set('name', r.name);
      if (r.op) q.set('op', r.op);
      const qs = q.toString();
      return `#/p/${r.id}/kernel${qs ? '?' + qs : ''}`;
    }
    default: {
      const q = new URLSearchParams();
      if (r.select) q.set('select', r.select);
      if (r.event !== undefined) q.set('event', String(r.event));
      if (r.events?.length) q.set('events', r.events.join(','));
      if (r.t0 !== undefined && r.t1 !== undefined) { q.set('t0', String(r.t0)); q.set('t1', String(r.t1)); }
      const qs = q.toString();
      return `#/p/${r.id}/${r.view}${qs ? '?' + qs : ''}`;
    }
  }
}
