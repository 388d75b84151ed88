// End-to-end tests of the explorer in a real browser (Debian's Chromium, headless, driven
// by playwright-core): start the server on saved profiles, open them, read the timeline,
// follow an op to its kernels, compare two profiles. Screenshots go to --out.
//   node e2e/run.mjs --server BUILD/tools/explorer/opscope-explore [--cli BUILD/tools/opscope] --out DIR -- PROFILE_DIR...
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { assert, checker, launchBrowser, startServer, timelineReady as ready } from './harness.mjs';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : fallback; };
const server = opt('--server');
const cli = opt('--cli');  // the opscope CLI, to compare its advice with the summary's
const out = opt('--out', 'e2e-artifacts');
const profiles = argv.includes('--') ? argv.slice(argv.indexOf('--') + 1) : [];
if (!server || !profiles.length) {
  console.error('usage: node e2e/run.mjs --server BIN --out DIR -- PROFILE_DIR...');
  process.exit(2);
}
mkdirSync(out, { recursive: true });

// ---- the server, on a free port; its first line of output carries the URL
const { url, proc } = await startServer(server, [...profiles, '--port', '0', '--rate', '0']);
console.log(`server: ${url}`);

const browser = await launchBrowser();
const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });

const { check, shot, state } = checker(page, out);
const timelineReady = (n = 1) => ready(page, n);

let ids = {};
await check('profiles view lists the RMSNorm implementations', async () => {
  await page.goto(url);
  await page.waitForSelector('[data-testid=profile-card]');
  const cards = await page.$$eval('[data-testid=profile-card]', (els) =>
    els.map((e) => ({ id: Number(e.dataset.id), label: e.querySelector('h2').textContent })));
  for (const c of cards) for (const impl of ['naive', 'builtin', 'compiled']) if (c.label.includes(impl)) ids[impl] = c.id;
  assert(ids.naive !== undefined && ids.builtin !== undefined && ids.compiled !== undefined,
    `expected naive, builtin and compiled among ${JSON.stringify(cards)}`);
  await shot('01-profiles');
});

await check('a corrupt profile is listed with its error', async () => {
  const errors = await page.$$eval('[data-testid=profile-error]', (els) => els.map((e) => e.textContent));
  assert(errors.length >= 1 && /corrupt|not a|database|missing/i.test(errors.join(' ')), `error cards: ${JSON.stringify(errors)}`);
});

await check('timeline shows host, runtime and device-core tracks', async () => {
  await page.goto(`${url}#/p/${ids.naive}/timeline`);
  await timelineReady();
  const lanes = await page.evaluate(() => window.__opscope.timelines[0].laneCounts());
  assert(lanes.framework >= 2 && lanes.runtime >= 1 && lanes.device >= 2, `lanes per layer: ${JSON.stringify(lanes)}`);
  const seen = await page.evaluate(() => {
    const t = window.__opscope.timelines[0];
    return t.locate('rmsnorm naive', 'framework') !== null;
  });
  assert(seen, 'the per-call range is drawn on the host track');
  await shot('02-timeline');
});

await check('memory track shows allocated bytes with the peak marked and a hover readout', async () => {
  await page.goto(`${url}#/p/${ids.naive}/timeline`);
  await timelineReady();
  const rows = await page.evaluate(() => window.__opscope.timelines[0].memoryState());
  assert(rows.length >= 1, 'no memory track');
  const m = rows[0];
  assert(/^cpu:\d+$/.test(m.name) && m.points >= 3, `memory track: ${JSON.stringify(m)}`);
  assert(/^peak \d[\d.]* (B|KiB|MiB|GiB)$/.test(m.peakLabel), `peak label: ${m.peakLabel}`);
  assert(m.peakX !== null, 'the peak marker is drawn in the fitted view');
  // The server's peak, and the readout at the marker reads that value.
  const api = await page.evaluate(async (id) => (await (await fetch(`/api/profiles/${id}/memory`)).json()), ids.naive);
  const peak = api.devices[0].peak;
  assert(peak.bytes > 0 && /rmsnorm naive/.test(peak.op), `peak: ${JSON.stringify(peak)}`);
  await page.mouse.move(m.peakX + 1, m.y);
  await page.waitForTimeout(100);
  const tip = await page.$eval('.timeline .tooltip', (e) => e.textContent);
  assert(/allocated at/.test(tip) && tip.startsWith(`${m.name}: `), `tooltip: ${tip}`);
  await shot('02b-memory-track');
  await page.mouse.move(5, 5);
});

// Finds the first event called `name` of `kind` in a profile; the event route zooms to it.
const firstEvent = (id, name, kind) => page.evaluate(async ([id, name, kind]) => {
  const r = await (await fetch(`/api/profiles/${id}/search?q=${name}&exact=1`)).json();
  return r.events.find((e) => e.kind === kind).e;
}, [id, name, kind]);

// Clears the selection and shows `e` at a third of the view's width, ready to be clicked.
const zoomAround = async (id, e) => {
  await page.focus('.timeline canvas');
  await page.keyboard.press('Escape');
  await page.evaluate(async ([id, e]) => {
    const d = await (await fetch(`/api/profiles/${id}/event/${e}`)).json();
    const w = d.t1 - d.t0;
    window.__opscope.timelines[0].zoomTo(d.t0 - w, d.t1 + w);
  }, [id, e]);
  await timelineReady();
};

await check('clicking a framework op highlights its kernels on the core tracks', async () => {
  // Real ops last microseconds inside a call of milliseconds: zoom to the first mean op,
  // and out a little, so its launch and its kernels (which run after it returns) show.
  const op = await firstEvent(ids.naive, 'mean', 'op');
  await page.goto(`${url}#/p/${ids.naive}/timeline?event=${op}`);
  await timelineReady();
  await zoomAround(ids.naive, op);
  const at = await page.evaluate(() => window.__opscope.timelines[0].locate('mean', 'framework'));
  assert(at, 'mean op not found on screen');
  await page.mouse.click(at.x, at.y);
  // Its kernels run after it returns, off screen here: the view widens to show them.
  await page.waitForFunction(() => window.__opscope.timelines[0].highlightedOn('device') > 0, null, { timeout: 10000 });
  await page.waitForFunction(() => window.__opscope.timelines[0].highlightedOn('device') > 1, null, { timeout: 3000 }).catch(() => {});
  const n = await page.evaluate(() => ({
    device: window.__opscope.timelines[0].highlightedOn('device'),
    runtime: window.__opscope.timelines[0].highlightedOn('runtime'),
  }));
  // The launch (about a microsecond) may merge with its neighbours at this zoom; the chain
  // in the details panel names it either way.
  const panel = await page.textContent('[data-testid=side-panel]');
  assert(n.device >= 1 && /kernels\s*[1-9]/i.test(panel) && (n.runtime >= 1 || /launches\s*1/i.test(panel)),
    `highlighted: ${JSON.stringify(n)}`);
  const name = await page.textContent('[data-testid=details-name]');
  assert(name === 'mean', `details panel shows ${name}`);
  await page.mouse.move(5, 5);
  await shot('03-op-selected');
});

await check('clicking a kernel highlights its launch and op', async () => {
  // Bring the first rsqrt_f32 kernel into view (the event route zooms to it), clear the
  // selection, then click the kernel on its core track.
  const kernel = await firstEvent(ids.naive, 'rsqrt_f32', 'kernel');
  await page.goto(`${url}#/p/${ids.naive}/timeline?event=${kernel}`);
  await timelineReady();
  await zoomAround(ids.naive, kernel);
  const at = await page.evaluate(() => window.__opscope.timelines[0].locate('rsqrt_f32', 'device'));
  assert(at, 'rsqrt_f32 kernel not found on screen');
  await page.mouse.click(at.x, at.y);
  await page.waitForFunction(() => document.querySelector('[data-testid=details-name]')?.textContent === 'rsqrt_f32', null, { timeout: 10000 });
  // Its op ran before it, maybe off screen: the view widens, and the windows reload.
  await page.waitForFunction(() => window.__opscope.timelines[0].highlightedOn('framework') >= 1, null, { timeout: 10000 })
    .catch(() => {});
  const n = await page.evaluate(() => window.__opscope.timelines[0].highlightedOn('framework'));
  assert(n >= 1, `framework events highlighted: ${n}`);
  await page.mouse.move(5, 5);
  await shot('04-kernel-selected');
});

await check('zoom and pan by keyboard, range selection shows statistics', async () => {
  const before = await page.evaluate(() => ({ ...window.__opscope.timelines[0].view }));
  await page.focus('.timeline canvas');
  await page.keyboard.press('+');
  await page.keyboard.press('ArrowRight');
  const after = await page.evaluate(() => ({ ...window.__opscope.timelines[0].view }));
  assert(after.t1 - after.t0 < before.t1 - before.t0, 'zoom in narrowed the view');
  await page.keyboard.press('0');
  await page.keyboard.press('Escape');
  const box = await page.locator('.timeline canvas').boundingBox();
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 300, box.y + 80);
  await page.mouse.down();
  await page.mouse.move(box.x + 700, box.y + 120, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('[data-testid=range-title]', { timeout: 10000 });
  await shot('05-range');
});

// The compiled profile's fused kernel event, opened in the timeline's side panel.
async function openFusedKernel() {
  const k = await page.evaluate(async (id) => {
    const r = await (await fetch(`/api/profiles/${id}/search?q=fused_`)).json();
    return r.events.find((e) => e.kind === 'kernel');
  }, ids.compiled);
  assert(k, 'no fused kernel in the compiled profile');
  await page.goto(`${url}#/p/${ids.compiled}/timeline?event=${k.e}`);
  return k;
}

await check('a compiled kernel shows its artifact: manifest and generated source', async () => {
  const k = await openFusedKernel();
  await page.waitForSelector('text=Compiled artifact', { timeout: 10000 });
  const text = await page.textContent('[data-testid=side-panel]');
  assert(/"hash"|cache_key|kernels/.test(text) && text.includes(k.name), `artifact panel: ${text.slice(0, 300)}`);
  assert(text.includes('mul, mean, add, rsqrt'), `the panel names the kernel's origin ops: ${text.slice(0, 300)}`);
  await shot('05b-artifact');
});

await check('inside a kernel: the hot lines, then source and assembly linked both ways', async () => {
  // From a kernel event's panel to its kernel view.
  await openFusedKernel();
  await page.waitForSelector('[data-testid=kernel-link]', { timeout: 10000 });
  await page.click('[data-testid=kernel-link]');
  await page.waitForSelector('[data-testid=kernel-view]', { timeout: 15000 });
  const src = await page.textContent('[data-testid=kernel-source]');
  assert(src.includes('kernels.cpp'), `the generated source is listed: ${src.slice(0, 200)}`);
  // A compiled kernel's code analysed: verdicts with their rule, and its loops.
  const code = await page.textContent('[data-testid=kernel-static]');
  assert(/\[(vectorized|passes|spills|scalar_loop|scalar_remainder|narrow_vectors|extra_bytes|gathers)\]/.test(code), `no verdict: ${code.slice(0, 300)}`);
  assert(/main 0x[0-9a-f]+kernels\.cpp:\d+-\d+/.test(code), `no main loop with its lines: ${code.slice(0, 400)}`);
  const hot = await page.$$('[data-testid=kernel-source] tr.kline.hot');
  assert(hot.length > 0, 'no hot source line');
  // Picking a hot line marks its instructions in the assembly, and back.
  await hot[0].click();
  const linked = await page.$$('[data-testid=kernel-asm] tr.kinstr.linked');
  assert(linked.length > 0, 'a hot line marks no instruction');
  await linked[0].click();
  assert((await page.$$('[data-testid=kernel-source] tr.kline.linked')).length === 1, 'an instruction marks its line');
  await shot('05c-kernel');
  // The profile's hottest lines, each linked to its kernel.
  await page.goto(`${url}#/p/${ids.naive}/kernel`);
  await page.waitForSelector('[data-testid=lines-view] tbody tr', { timeout: 10000 });
  const first = await page.$('[data-testid=lines-view] tbody tr a');
  assert(first, 'no kernel linked from the lines table');
  await first.click();
  await page.waitForSelector('[data-testid=kernel-view]', { timeout: 15000 });
});

await check('summary shows recommendations with evidence', async () => {
  await page.goto(`${url}#/p/${ids.naive}/summary`);
  await page.waitForSelector('[data-testid=recommendations] li');
  const text = await page.textContent('[data-testid=recommendations]');
  assert(/Replace the 6-op RMSNorm with one fused kernel/.test(text), `recommendations: ${text.slice(0, 300)}`);
  assert(!/_ns|_gbps|estimated_saving/.test(text), `raw field names in the recommendations: ${text.slice(0, 300)}`);
  // The naive version's allocator peak, in one of its six ops.
  const peak = await page.textContent('[data-testid=memory-peak]');
  assert(/peak memory · cpu:0\s*[\d.]+ (KiB|MiB)\s*in rmsnorm naive > \w+/.test(peak), `memory peak: ${peak}`);
  await shot('06-summary');
});

await check('summary shows the advisor\'s suggestions and figures, as the CLI prints them', async () => {
  // One engine: `opscope advise --json` on the same profile names the same fixes and figures.
  assert(cli, 'no --cli given');
  const dir = profiles.find((d) => /naive$/.test(d));
  const advice = JSON.parse(execFileSync(cli, ['advise', dir, '--json', '--limit', '5'], { encoding: 'utf8' }));
  assert(advice.suggestions.length > 0, 'the CLI found nothing to fuse');
  await page.goto(`${url}#/p/${ids.naive}/summary`);
  await page.waitForSelector('[data-testid=recommendations] li');
  const cards = await page.$$eval('[data-testid=recommendations] li.rec-fuse', (els) => els.map((e) => ({
    title: e.querySelector('strong').textContent,
    detail: e.querySelector('p').textContent,
    figures: [...e.querySelectorAll('.ev')].map((f) => [f.querySelector('dt').textContent, f.querySelector('dd').textContent]),
  })));
  assert(cards.length === advice.suggestions.length, `${cards.length} cards, ${advice.suggestions.length} suggestions`);
  advice.suggestions.forEach((s, i) => {
    const c = cards[i];
    assert(c.title === s.title, `#${i + 1} title: explorer "${c.title}", CLI "${s.title}"`);
    assert(c.detail === s.fix, `#${i + 1} fix: explorer "${c.detail}", CLI "${s.fix}"`);
    const want = s.figures.filter((f) => f.label !== 'fix').map((f) => [f.label, f.text]);
    assert(JSON.stringify(c.figures) === JSON.stringify(want),
      `#${i + 1} figures: explorer ${JSON.stringify(c.figures)}, CLI ${JSON.stringify(want)}`);
  });
  // The CLI's table prints the same figure lines.
  const table = execFileSync(cli, ['advise', dir, '--limit', '5'], { encoding: 'utf8' });
  for (const s of advice.suggestions) {
    assert(table.includes(s.title), `CLI table lacks "${s.title}"`);
    for (const f of s.figures) assert(table.includes(f.text), `CLI table lacks "${f.text}"`);
  }
});

await check('summary plots the ops under the measured roofline', async () => {
  // `opscope profile` measured the device's peaks and stored them in the profile.
  await page.goto(`${url}#/p/${ids.naive}/summary`);
  await page.waitForSelector('[data-testid=roofline]');
  assert(await page.locator('[data-testid=roof]').count() === 1, 'no roof drawn: the profile lacks device peaks');
  const ops = await page.locator('[data-testid=roofline] circle').evaluateAll((cs) => cs.map((c) => c.dataset.op));
  for (const op of ['mul', 'mean', 'rsqrt']) assert(ops.includes(op), `roofline points: ${ops.join(', ')}`);
  const tip = await page.locator('[data-testid=roofline] circle[data-op=mul] title').textContent();
  assert(/GFLOP\/s/.test(tip) && /of the memory roof/.test(tip), `tooltip: ${tip}`);
  await shot('06b-roofline');
});

await check('operator table sorts, filters and selects events', async () => {
  await page.goto(`${url}#/p/${ids.naive}/ops`);
  await page.waitForSelector('[data-testid=ops-table] tbody tr');
  await page.fill('input.filter', 'mul');
  const names = await page.$$eval('[data-testid=ops-table] tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
  assert(names.length >= 1 && names.every((n) => n.includes('mul')), `filtered: ${names}`);
  // Achieved rates against the profile's roofline, per op.
  const head = await page.textContent('[data-testid=ops-table] thead');
  assert(head.includes('GB/s') && head.includes('% Roofline'), `ops table header: ${head}`);
  const mulRow = await page.$$eval('[data-testid=ops-table] tbody tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)).find((c) => c[0] === 'mul'));
  assert(mulRow && mulRow.some((c) => /GB\/s$/.test(c)) && mulRow.some((c) => /%$/.test(c)), `mul row: ${mulRow}`);
  await page.fill('input.filter', '');
  await shot('07-ops');
  await page.click('[data-testid=ops-table] tbody tr:first-child');
  await timelineReady();
  const lit = await page.evaluate(() => window.__opscope.timelines[0].highlight.size);
  assert(lit > 0, 'row selected no events');
});

await check('compare view: delta table and both timelines', async () => {
  await page.goto(`${url}#/compare/${ids.naive}/${ids.compiled}`);
  await page.waitForSelector('[data-testid=delta-table] tbody tr');
  await timelineReady(2);
  const rows = await page.$$eval('[data-testid=delta-table] tbody tr', (trs) => trs.length);
  assert(rows >= 7, `delta rows: ${rows}`);
  await shot('08-compare');
});

await check('compare view: ops added and removed, bytes, the total change', async () => {
  // naive (six ops) against builtin (one rms_norm op): the numbers of `opscope diff`.
  await page.goto(`${url}#/compare/${ids.naive}/${ids.builtin}`);
  await page.waitForSelector('[data-testid=delta-table] tbody tr');
  await timelineReady(2);
  const cmp = await page.evaluate(async ([a, b]) => (await fetch(`/api/compare?a=${a}&b=${b}`)).json(), [ids.naive, ids.builtin]);
  const listed = (id) => page.$$eval(`[data-testid=${id}] li b`, (bs) => bs.map((b) => b.textContent));
  const added = await listed('added-ops'), removed = await listed('removed-ops');
  assert(added.includes('rms_norm') && !added.includes('mean'), `added: ${added}`);
  assert(removed.includes('mean') && removed.includes('rsqrt') && !removed.includes('rms_norm'), `removed: ${removed}`);
  const heads = [await page.textContent('[data-testid=added-ops] h3'), await page.textContent('[data-testid=removed-ops] h3')];
  assert(heads[0].endsWith(`(${cmp.counts.added})`) && heads[1].endsWith(`(${cmp.counts.removed})`),
    `counts ${JSON.stringify(cmp.counts)} vs ${heads}`);
  const counts = await page.textContent('[data-testid=op-changes] strong');
  assert(counts === `+${cmp.counts.added} / −${cmp.counts.removed}`, `rows added / removed: ${counts}`);
  // The total change has the sign of the diff's, and the bytes moved are shown.
  const change = await page.textContent('[data-testid=total-change] strong');
  const d = cmp.delta.self_device_total_ns;
  assert(d < 0 ? change.startsWith('−') : d > 0 ? change.startsWith('+') : change === '0', `total change ${change} for ${d} ns`);
  const bytes = await page.textContent('[data-testid=bytes-change]');
  assert(/\d+(\.\d+)? (B|KiB|MiB)/.test(bytes) && cmp.b.bytes > 0, `bytes: ${bytes}`);
  // Naive vs built-in: the fused kernel never allocates the intermediates, so B's peak is lower.
  const mem = await page.textContent('[data-testid=memory-change]');
  assert(cmp.a.has_memory && cmp.b.peak_memory < cmp.a.peak_memory && cmp.delta.peak_memory < 0 && mem.includes('−'),
    `peak memory: ${mem} (${cmp.a.peak_memory} → ${cmp.b.peak_memory})`);
  assert(cmp.warnings.length === 0 && (await page.$('[data-testid=compare-warnings]')) === null,
    `warnings for two profiles of one run: ${JSON.stringify(cmp.warnings)}`);
  // The table has the status and bytes columns; filtering by "added" leaves the added rows.
  const columns = await page.$$eval('[data-testid=delta-table] th', (ths) => ths.map((t) => t.textContent));
  assert(columns.some((x) => x.startsWith('Status')) && columns.some((x) => x.startsWith('Bytes A')), `columns: ${columns}`);
  await page.fill('input.filter', 'added');
  const statuses = await page.$$eval('[data-testid=delta-table] tbody tr td:nth-child(3)', (tds) => tds.map((t) => t.textContent));
  assert(statuses.length === cmp.counts.added && statuses.every((x) => x === 'added'), `statuses: ${statuses}`);
  const row = cmp.rows.find((r) => r.name === 'rms_norm' && r.kind === 'op');
  assert(row && row.status === 'added' && row.b_bytes > 0 && row.a_bytes === 0, `rms_norm row: ${JSON.stringify(row)}`);
  await page.fill('input.filter', '');
  await shot('08b-compare-added-removed');
});

await check('search finds events by name', async () => {
  await page.fill('#search', 'rsqrt');
  await page.waitForSelector('.search-results a', { timeout: 10000 });
  await shot('09-search');
  await page.click('.search-results a');
  await timelineReady();
});

await check('dark theme', async () => {
  await page.goto(`${url}#/p/${ids.naive}/timeline`);
  await timelineReady();
  await page.click('#theme');
  await page.waitForTimeout(200);
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  assert(theme === 'dark', `theme ${theme}`);
  const at = await page.evaluate(() => window.__opscope.timelines[0].locate('mul', 'framework'));
  if (at) await page.mouse.click(at.x, at.y);
  await page.waitForTimeout(300);
  await page.mouse.move(5, 5);
  await shot('10-timeline-dark');
  await page.goto(`${url}#/p/${ids.naive}/summary`);
  await page.waitForSelector('[data-testid=recommendations] li');
  await shot('11-summary-dark');
  await page.click('#theme');
});

await check('no errors in the page', async () => {
  assert(consoleErrors.length === 0, consoleErrors.join('\n'));
});

await browser.close();
proc.kill('SIGTERM');
console.log(`screenshots: ${out}`);
console.log(`${state.passed} passed, ${state.failed} failed`);
process.exit(state.failed ? 1 : 0);
