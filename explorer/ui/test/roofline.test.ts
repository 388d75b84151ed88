import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attainable, logBounds, rooflineSvg, type RooflineData } from '../src/roofline';

const data = (over: Partial<RooflineData> = {}): RooflineData => ({
  peak_gbps: 20, peak_gflops: 200, ridge: 10, known: true, data_only_ops: 0,
  points: [
    { name: 'mul', calls: 6, device_ns: 4e6, bytes: 8e7, flops: 1e7, ai: 0.125, gflops: 2.5, gbps: 20, bound: 'memory', fraction: 1 },
    { name: 'matmul', calls: 2, device_ns: 1e7, bytes: 1e7, flops: 1e9, ai: 100, gflops: 100, gbps: 1, bound: 'compute', fraction: 0.5 },
  ],
  ...over,
});

test('log bounds are whole decades around the values', () => {
  assert.deepEqual(logBounds([0.125, 100]), [-1, 2]);
  assert.deepEqual(logBounds([5]), [0, 1]);
  assert.deepEqual(logBounds([0, -3]), [0, 1]);
  assert.deepEqual(logBounds([1, 10]), [0, 1]);
});

test('the roof is the bandwidth slope below the ridge and flat above it', () => {
  const r = data();
  assert.equal(attainable(r, 1), 20);
  assert.equal(attainable(r, 10), 200);
  assert.equal(attainable(r, 1000), 200);
});

test('the chart draws the roof and one dot per op, named in its tooltip', () => {
  const svg = rooflineSvg(data());
  assert.match(svg, /data-testid="roof"/);
  assert.equal((svg.match(/<circle /g) ?? []).length, 2);
  assert.match(svg, /data-op="matmul"/);
  assert.match(svg, /50% of the compute roof/);
  assert.match(svg, /100% of the memory roof/);
  // Names are escaped in attributes and tooltips.
  const evil = rooflineSvg(data({ points: [{ ...data().points[0], name: '<x>"' }] }));
  assert.ok(!evil.includes('<x>'));
  assert.match(evil, /&lt;x&gt;&quot;/);
});

test('without peaks there is no roof and the chart says why; without points, a note', () => {
  const svg = rooflineSvg(data({ known: false, peak_gbps: 0, peak_gflops: 0, ridge: 0, data_only_ops: 3 }));
  assert.ok(!svg.includes('data-testid="roof"'));
  assert.match(svg, /no device peaks/);
  assert.match(svg, /3 ops move data without flops/);
  assert.match(rooflineSvg(data({ points: [] })), /No op with floating-point work/);
});
