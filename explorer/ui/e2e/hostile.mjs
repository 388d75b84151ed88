// Imported traces are untrusted input. Two torch.profiler traces whose op, kernel, thread,
// GPU and file names are HTML that would run script if the UI inserted them as markup go
// through every view (profiles, summary, operators, timeline labels, tooltip, details,
// range, search, compare): no script runs, no element is injected, no inline script
// is even attempted (the Content-Security-Policy reports none), and each name reads as
// the text it is. Then the policy itself: markup injected on purpose runs nothing. Then a
// server on a network address: the printed URL (with its token) works, the bare one says
// what is missing.
//   node e2e/hostile.mjs --server BUILD/tools/explorer/opscope-explore --out DIR
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, checker, launchBrowser, startServer, timelineReady } from './harness.mjs';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : fallback; };
const server = opt('--server');
const out = opt('--out', 'e2e-artifacts');
if (!server) {
  console.error('usage: node e2e/hostile.mjs --server BIN --out DIR');
  process.exit(2);
}
mkdirSync(out, { recursive: true });

// Each sets window.__pwned if it ever runs.
const OP = '<script>window.__pwned="op"</script>';
const LAUNCH = '<svg><script>window.__pwned="launch"</script></svg>';  // the runtime call
const KERNEL = '"><img src=x onerror="window.__pwned=\'kernel\'">';
const THREAD = '<img src=x onerror="window.__pwned=\'thread\'">';
const GPU = '<img src=x onerror=window.__pwned=\'gpu\'> H100';
const ONLY_A = "' onmouseover='window.__pwned=1' data-x='";
const ONLY_B = '<svg onload="window.__pwned=\'svg\'">';
const SELECT = '<img src=x onerror="window.__pwned=\'select\'">';
const FILE_A = "<img src=x onerror=window.__pwned='label'> A.json";  // a file name has no '/'
const FILE_B = '<u>B.json';

// A 2024 torch.profiler trace: the hostile op makes a hostile runtime call that launches the
// hostile kernel, and allocates (so it is the memory peak's op); `extra` is an op only this
// trace has.
function trace(extra) {
  const x = (cat, name, pid, tid, ts, dur, args = {}) => ({ ph: 'X', cat, name, pid, tid, ts, dur, args });
  const flow = (ph, id, pid, tid, ts) => ({ ph, id, pid, tid, ts, cat: 'ac2g', name: 'ac2g', ...(ph === 'f' ? { bp: 'e' } : {}) });
  const mem = (ts, addr, bytes, total) => ({ ph: 'i', cat: 'cpu_instant_event', s: 't', name: '[memory]', pid: 100, tid: 100, ts,
    args: { Addr: addr, Bytes: bytes, 'Total Allocated': total, 'Total Reserved': 2 * total, 'Device Type': 1, 'Device Id': 0 } });
  const ev = [
    { ph: 'M', name: 'thread_name', pid: 100, tid: 100, args: { name: THREAD } },
    x('cpu_op', OP, 100, 100, 10, 40, { 'External id': 1, 'Input Dims': [[8, 64]], 'Input type': ['float'] }),
    x('cuda_runtime', LAUNCH, 100, 100, 20, 5, { correlation: 10, 'External id': 1 }),
    flow('s', 10, 100, 100, 20),
    x('kernel', KERNEL, 0, 7, 30, 20, { correlation: 10, device: 0, stream: 7 }),
    flow('f', 10, 0, 7, 30),
    mem(15, 0x7f0000, 1 << 20, 1 << 20),
    mem(45, 0x7f0000, -(1 << 20), 0),
    x('cpu_op', extra, 100, 100, 60, 20, { 'External id': 2 }),
    x('cuda_runtime', 'cudaLaunchKernel', 100, 100, 62, 4, { correlation: 11, 'External id': 2 }),
    x('kernel', `${extra} kernel`, 0, 7, 70, 8, { correlation: 11, device: 0, stream: 7 }),
  ];
  return {
    schemaVersion: 1, traceEvents: ev, displayTimeUnit: 'ms', baseTimeNanoseconds: 1700000000000000000,
    deviceProperties: [{ id: 0, name: GPU, totalGlobalMem: 85045231616, computeMajor: 9, computeMinor: 0, numSms: 132 }],
  };
}

const work = mkdtempSync(join(tmpdir(), 'opscope-hostile-'));
writeFileSync(join(work, FILE_A), JSON.stringify(trace(ONLY_A)));
writeFileSync(join(work, FILE_B), JSON.stringify(trace(ONLY_B)));

const { url, proc } = await startServer(server, [join(work, FILE_A), join(work, FILE_B), '--port', '0', '--rate', '0']);
console.log(`server: ${url}`);
const browser = await launchBrowser();
const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
const problems = [];  // anything that ran, popped up or was refused by the policy
page.on('pageerror', (e) => problems.push(`page error: ${e}`));
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
page.on('dialog', (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
await page.addInitScript(() => {
  window.__violations = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective}: ${e.sample || e.blockedURI}`));
});
const { check, shot, state } = checker(page, out);

// Nothing ran or was injected, and every name in `texts` reads as itself on the page.
// Each call reports what happened since the one before.
async function clean(texts = []) {
  const s = await page.evaluate(() => ({
    pwned: window.__pwned, violations: window.__violations.splice(0),
    injected: [...document.querySelectorAll('img, iframe, object, embed, script:not([src]), [onerror], [onload], [onmouseover]')].map((e) => e.outerHTML),
    text: document.body.innerText,
  }));
  const seen = problems.splice(0);
  assert(s.pwned === undefined, `script ran: window.__pwned = ${s.pwned}`);
  assert(!s.injected.length, `elements injected: ${s.injected.join(' | ')}`);
  assert(!s.violations.length, `the policy refused: ${s.violations.join(' | ')}`);
  assert(!seen.length, seen.join('\n'));
  for (const t of texts) assert(s.text.includes(t), `"${t}" is not on the page as text`);
}

const api = (path) => page.evaluate(async (p) => (await fetch(p)).json(), path);
let A = 0, B = 1;

await check('profiles: hostile file and GPU names are text', async () => {
  await page.goto(url);
  await page.waitForSelector('[data-testid=profile-card]');
  const { profiles } = await api('/api/profiles');
  A = profiles.find((p) => p.label.includes('A.json')).id;
  B = profiles.find((p) => p.label.includes('B.json')).id;
  const labels = await page.$$eval('[data-testid=profile-card] h2', (hs) => hs.map((h) => h.textContent));
  assert(labels.includes(profiles[A].label) && labels.includes(profiles[B].label), `card titles: ${labels}`);
  assert(profiles[A].label.includes('<img'), `label ${profiles[A].label}`);
  await clean([profiles[A].label, FILE_B, GPU]);
  await shot('hostile-01-profiles');
});

await check('summary: top ops, kernels and the memory peak', async () => {
  await page.goto(`${url}#/p/${A}/summary`);
  await page.waitForSelector('#top-ops tbody tr');
  // The kernels table lists device kernels (never the runtime call that launched them).
  await clean([OP, KERNEL]);
  const peak = await page.textContent('[data-testid=memory-peak]');
  assert(peak.includes(OP), `memory peak: ${peak}`);
  // Bars are sized through the CSSOM (no style attributes): the busiest core's is drawn.
  const widths = await page.$$eval('.bar div', (ds) => ds.map((d) => d.style.width));
  assert(widths.length && widths.every((w) => /%$/.test(w)), `bar widths: ${widths}`);
  await shot('hostile-02-summary');
});

await check('operators table and its filter', async () => {
  await page.goto(`${url}#/p/${A}/ops`);
  await page.waitForSelector('[data-testid=ops-table] tbody tr');
  const names = await page.$$eval('[data-testid=ops-table] tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
  for (const n of [OP, ONLY_A, KERNEL]) assert(names.includes(n), `rows: ${JSON.stringify(names)}`);
  await page.fill('input.filter', 'onerror');
  await clean([KERNEL]);
  await shot('hostile-03-ops');
});

await check('timeline: labels, tooltip, details and chain', async () => {
  const { events } = await api(`/api/profiles/${A}/search?q=${encodeURIComponent(OP)}&exact=1`);
  await page.goto(`${url}#/p/${A}/timeline?event=${events[0].e}`);
  await timelineReady(page);
  await page.waitForFunction(() => document.querySelector('[data-testid=details-name]'));
  const details = await page.textContent('[data-testid=details-name]');
  assert(details === OP, `details title: ${details}`);
  const labels = await page.evaluate(() => window.__opscope.timelines[0].drawnLabels());
  assert(labels.includes(OP), `canvas labels: ${JSON.stringify(labels)}`);
  const thread = labels.find((l) => l.startsWith('<img src=x'));
  assert(thread && THREAD.startsWith(thread.replace(/…$/, '')), `thread label: ${JSON.stringify(labels)}`);
  const at = await page.evaluate((n) => window.__opscope.timelines[0].locate(n, 'framework'), OP);
  assert(at, 'the op is not drawn');
  await page.mouse.move(at.x, at.y);
  await page.waitForFunction(() => document.querySelector('.timeline .tooltip')?.style.display === 'block');
  const tip = await page.$eval('.timeline .tooltip', (e) => e.textContent);
  assert(tip.startsWith(`${OP} · `), `tooltip: ${tip}`);
  const panel = await page.textContent('[data-testid=side-panel]');
  assert(panel.includes(KERNEL) && panel.includes(LAUNCH), `the chain lists the launch and kernel: ${panel.slice(0, 300)}`);
  await clean([OP, LAUNCH, KERNEL]);
  await shot('hostile-04-timeline');
});

await check('timeline: range statistics name the ops', async () => {
  await page.goto(`${url}#/p/${A}/timeline`);
  await timelineReady(page);
  const box = await page.locator('.timeline canvas').boundingBox();
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 200, box.y + 60);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 20, box.y + 90, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('[data-testid=range-title]', { timeout: 10000 });
  await clean([OP]);
});

await check('timeline: a name in the route (?select=) is text', async () => {
  await page.goto(`${url}#/p/${A}/timeline?select=${encodeURIComponent(SELECT)}`);
  await timelineReady(page);
  await page.waitForFunction((s) => document.querySelector('[data-testid=side-panel] .title')?.textContent === s, SELECT);
  await clean([SELECT]);
});

await check('search results', async () => {
  await page.fill('#search', 'window.__pwned');
  await page.waitForSelector('.search-results a', { timeout: 10000 });
  await clean([OP, KERNEL]);
  const items = await page.$$eval('.search-results a span:first-child', (ss) => ss.map((s) => s.textContent));
  assert(items.some((t) => t.startsWith(OP)), `results: ${JSON.stringify(items)}`);
  await shot('hostile-05-search');
  await page.keyboard.press('Escape');
});

await check('compare: delta table, added and removed ops, labels', async () => {
  await page.goto(`${url}#/compare/${A}/${B}`);
  await page.waitForSelector('[data-testid=delta-table] tbody tr');
  await timelineReady(page, 2);
  const added = await page.$$eval('[data-testid=added-ops] li b', (bs) => bs.map((b) => b.textContent));
  const removed = await page.$$eval('[data-testid=removed-ops] li b', (bs) => bs.map((b) => b.textContent));
  assert(added.includes(ONLY_B), `added: ${JSON.stringify(added)}`);
  assert(removed.includes(ONLY_A), `removed: ${JSON.stringify(removed)}`);
  const rows = await page.$$eval('[data-testid=delta-table] tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
  for (const n of [OP, KERNEL, ONLY_A, ONLY_B]) assert(rows.includes(n), `delta rows: ${JSON.stringify(rows)}`);
  const options = await page.$$eval('#cmp-a option', (os) => os.map((o) => o.textContent));
  assert(options.some((o) => o.includes('<img')), `profile choices: ${options}`);
  await clean([OP, ONLY_A, ONLY_B, FILE_B]);
  await shot('hostile-06-compare');
});

await check('the policy runs no injected markup (defence in depth)', async () => {
  await page.goto(`${url}#/`);
  await page.waitForSelector('[data-testid=profile-card]');
  const r = await page.evaluate(async () => {
    window.__violations = [];
    document.body.insertAdjacentHTML('beforeend', '<img src="data:," onerror="window.__pwned=\'attr\'" onload="window.__pwned=\'attr\'">');
    const s = document.createElement('script');
    s.textContent = 'window.__pwned = "inline"';
    document.body.append(s);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { pwned: window.__pwned, violations: window.__violations };
  });
  assert(r.pwned === undefined, `injected markup ran: ${r.pwned}`);
  assert(r.violations.some((v) => v.startsWith('script-src')), `no script-src violation reported: ${JSON.stringify(r.violations)}`);
  problems.length = 0;  // the refusals above are logged as console errors on purpose
});

proc.kill('SIGTERM');

// ---- a server on a network address: the token in the printed URL opens it.
await check('a network address: the printed URL works, the bare one asks for the token', async () => {
  const net = await startServer(server, [join(work, FILE_B), '--host', '127.0.0.2', '--port', '0', '--rate', '0']);
  try {
    const m = /^http:\/\/127\.0\.0\.2:(\d+)\/\?token=([0-9a-f]{48})$/.exec(net.url);
    assert(m, `printed URL: ${net.url}`);
    const sent = [];
    const onRequest = (r) => { if (r.url().includes('/api/')) sent.push(r.headers().authorization ?? ''); };
    page.on('request', onRequest);
    await page.goto(net.url);
    await page.waitForSelector('[data-testid=profile-card]');
    await page.goto(`${net.url}#/p/0/ops`);
    await page.waitForSelector('[data-testid=ops-table] tbody tr');
    page.off('request', onRequest);
    assert(sent.length >= 2 && sent.every((h) => h === `token ${m[2]}`), `Authorization headers: ${JSON.stringify(sent)}`);
    await page.goto(net.url.replace(/\?token=.*$/, ''));
    await page.waitForSelector('[data-testid=server-error]');
    const text = await page.textContent('[data-testid=server-error]');
    assert(/access token/.test(text) && /\?token=/.test(text), `bare URL: ${text}`);
    await shot('hostile-07-token');
    problems.length = 0;  // the 401 is logged as a failed resource on purpose
  } finally {
    net.proc.kill('SIGTERM');
  }
});

await browser.close();
rmSync(work, { recursive: true, force: true });
console.log(`${state.passed} passed, ${state.failed} failed`);
process.exit(state.failed ? 1 : 0);
