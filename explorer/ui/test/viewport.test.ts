import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clampView, fitView, MIN_SPAN_NS, panBy, rulerTicks, tickLabel, timeToX, xToTime, zoomAt } from '../src/viewport';

const b = { begin: 0, end: 1_000_000 };

test('time and pixels map both ways', () => {
  const v = { t0: 1000, t1: 3000, width: 200 };
  assert.equal(timeToX(v, 2000), 100);
  assert.equal(xToTime(v, 50), 1500);
  assert.equal(xToTime(v, timeToX(v, 2345)), 2345);
});

test('zoom keeps the time under the pointer in place', () => {
  const v = { t0: 0, t1: 100_000, width: 1000 };
  const z = zoomAt(v, 0.5, 250, b);
  assert.equal(z.t1 - z.t0, 50_000);
  assert.ok(Math.abs(xToTime(z, 250) - xToTime(v, 250)) < 1e-6);
});

test('zoom stops at the minimum span and at the whole profile', () => {
  let v = { t0: 0, t1: 1000, width: 500 };
  for (let i = 0; i < 50; i++) v = zoomAt(v, 0.5, 100, b);
  assert.equal(v.t1 - v.t0, MIN_SPAN_NS);
  for (let i = 0; i < 80; i++) v = zoomAt(v, 2, 100, b);
  assert.ok(v.t1 - v.t0 <= (b.end - b.begin) * 1.1 + 1e-6);
  assert.ok(v.t0 >= b.begin - (b.end - b.begin) * 0.05 - 1e-6);
});

test('pan moves by pixels and stops at the edges', () => {
  const v = { t0: 100_000, t1: 200_000, width: 1000 };
  const p = panBy(v, 100, b);
  assert.equal(p.t0, 110_000);
  assert.equal(p.t1 - p.t0, 100_000);
  const far = panBy(v, 1e9, b);
  assert.equal(far.t1, b.end + (b.end - b.begin) * 0.05);
  const back = panBy(v, -1e9, b);
  assert.equal(back.t0, b.begin - (b.end - b.begin) * 0.05);
});

test('fit shows the whole profile with a margin', () => {
  const v = fitView(b, 800);
  assert.ok(v.t0 < b.begin && v.t1 > b.end);
  assert.deepEqual(clampView(v, b), v);
});

test('ruler ticks fall on 1-2-5 steps with unit labels', () => {
  const ticks = rulerTicks({ t0: 0, t1: 1_000_000, width: 1000 }, 100);
  const step = ticks[1].t - ticks[0].t;
  assert.equal(step, 100_000);
  assert.equal(ticks[0].label, '0 µs');
  assert.equal(ticks[3].label, '300 µs');
  assert.ok(ticks.every((t) => t.x >= 0 && t.x <= 1000));
  assert.equal(tickLabel(1_500_000, 500_000), '1.5 ms');
  assert.equal(tickLabel(2_000_000_000, 1_000_000_000), '2 s');
  assert.equal(tickLabel(250, 50), '250 ns');
});

test('ruler ticks are relative to the origin', () => {
  const ticks = rulerTicks({ t0: 5000, t1: 6000, width: 1000 }, 100, 5000);
  assert.equal(ticks[0].t, 5000);
  assert.equal(ticks[0].label, '0 ns');
});
