import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventColor, hashName } from '../src/colors';
import { escapeHtml, formatBytes, formatDelta, formatDuration, formatPct } from '../src/format';
import { drawableAt, layoutLanes, rowAt } from '../src/layout';
import { parseRoute, routeHash } from '../src/route';
import { filterRows, sortRows } from '../src/table';
import type { LaneInfo } from '../src/api';

test('durations pick their unit', () => {
  assert.equal(formatDuration(512), '512 ns');
  assert.equal(formatDuration(1500), '1.5 µs');
  assert.equal(formatDuration(12_345_678), '12.3 ms');
  assert.equal(formatDuration(3_000_000_000), '3 s');
  assert.equal(formatDelta(-1500), '−1.5 µs');
  assert.equal(formatDelta(2_000_000), '+2 ms');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(64 * 1024 * 1024), '64 MiB');
  assert.equal(formatPct(0.256), '25.6%');
});

test('names are escaped for HTML', () => {
  assert.equal(escapeHtml('<a href="x">\'&'), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;');
});

test('colour is by layer and stable by name', () => {
  const hue = (c: string) => Number(/hsl\((\d+)/.exec(c)![1]);
  assert.equal(eventColor('device', 'add_f32', 'light'), eventColor('device', 'add_f32', 'light'));
  assert.ok(hue(eventColor('framework', 'add', 'light')) >= 212 && hue(eventColor('framework', 'add', 'light')) <= 250);
  assert.ok(hue(eventColor('runtime', 'add_f32', 'dark')) <= 46);
  assert.ok(hue(eventColor('device', 'mul_f32', 'dark')) >= 150);
  assert.notEqual(hashName('pow'), hashName('mul'));
});

const lanes: LaneInfo[] = [
  { lane: 0, name: 'main', group: 'main', layer: 'framework', track: 0, depth: 0, events: 10 },
  { lane: 1, name: 'main · 1', group: 'main', layer: 'framework', track: 0, depth: 1, events: 5 },
  { lane: 2, name: 'runtime · main', group: 'runtime · main', layer: 'runtime', track: 0, depth: 0, events: 5 },
  { lane: 3, name: 'core 0', group: 'core 0', layer: 'device', track: 1, depth: 0, events: 5 },
];

test('lanes of a group stack, groups are separated by a gap', () => {
  const l = layoutLanes(lanes, 30, 20, 10);
  assert.deepEqual(l.rows.map((r) => r.y), [30, 50, 80, 110]);
  assert.deepEqual(l.rows.map((r) => r.first), [true, false, true, true]);
  assert.equal(l.height, 100);
  assert.equal(rowAt(l, 55)?.lane, 1);
  assert.equal(rowAt(l, 75), null);  // in the gap
});

test('hit testing finds the drawable under a time', () => {
  const w = { lane: 0, t0: [0, 100, 300], t1: [50, 200, 310], e: [7, 8, 9], name: [0, 0, 0], n: [1, 1, 1] };
  assert.equal(drawableAt(w, 150, 0), 1);
  assert.equal(drawableAt(w, 250, 0), -1);
  assert.equal(drawableAt(w, 295, 10), 2);  // within the slop
  assert.equal(drawableAt(w, 60, 20), 0);
  assert.equal(drawableAt({ ...w, t0: [], t1: [], e: [], name: [], n: [] }, 10, 5), -1);
});

test('table rows sort by number or text and filter by every term', () => {
  const rows = [{ name: 'mul', kind: 'op', t: 5 }, { name: 'add', kind: 'op', t: 9 }, { name: 'add_f32', kind: 'kernel', t: 1 }];
  assert.deepEqual(sortRows(rows, 't', 'desc').map((r) => r.t), [9, 5, 1]);
  assert.deepEqual(sortRows(rows, 'name', 'asc').map((r) => r.name), ['add', 'add_f32', 'mul']);
  assert.deepEqual(filterRows(rows, 'ADD', ['name']).length, 2);
  assert.deepEqual(filterRows(rows, 'add kernel', ['name', 'kind']).map((r) => r.name), ['add_f32']);
  assert.equal(filterRows(rows, '  ', ['name']).length, 3);
});

test('routes parse and print back', () => {
  assert.deepEqual(parseRoute(''), { view: 'profiles' });
  assert.deepEqual(parseRoute('#/p/2/summary'), { view: 'summary', id: 2 });
  assert.deepEqual(parseRoute('#/p/0/timeline?select=add%20x'), { view: 'timeline', id: 0, select: 'add x' });
  assert.deepEqual(parseRoute('#/p/1/timeline?events=4,5,x'), { view: 'timeline', id: 1, events: [4, 5] });
  assert.deepEqual(parseRoute('#/compare/0/2'), { view: 'compare', a: 0, b: 2 });
  assert.deepEqual(parseRoute('#/p/abc/ops'), { view: 'profiles' });
  assert.deepEqual(parseRoute('#/p/1/kernel'), { view: 'kernel', id: 1 });
  assert.deepEqual(parseRoute('#/p/1/kernel?name=mul_f32&op=aten%3A%3Amul'),
    { view: 'kernel', id: 1, name: 'mul_f32', op: 'aten::mul' });
  for (const h of ['#/', '#/p/3/ops', '#/compare/1/0', '#/p/0/timeline?event=12', '#/p/2/kernel',
    '#/p/2/kernel?name=fused_x_f32&op=aten%3A%3Amul'])
    assert.equal(routeHash(parseRoute(h)), h);
});
