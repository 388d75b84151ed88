import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemorySeries } from '../src/api';
import { peakLabel, readout, stepPoints, valueAt } from '../src/memory';

const s = { t: [0, 100, 250, 400], bytes: [1024, 4096, 2048, 2048] };

test('valueAt holds each value until the next point', () => {
  assert.equal(valueAt(s, 0), 1024);
  assert.equal(valueAt(s, 99), 1024);
  assert.equal(valueAt(s, 100), 4096);
  assert.equal(valueAt(s, 249.5), 4096);
  assert.equal(valueAt(s, 400), 2048);
  assert.equal(valueAt(s, -1), null);
  assert.equal(valueAt(s, 401), null);
  assert.equal(valueAt({ t: [], bytes: [] }, 0), null);
});

test('stepPoints draws steps, not slopes, scaled to the height', () => {
  const v = { t0: 0, t1: 400, width: 400 };
  const pts = stepPoints(s, v, 100, 4096);
  // Each change is a vertical edge at its time: (x, old) then (x, new).
  assert.deepEqual(pts, [[0, 75], [100, 75], [100, 0], [250, 0], [250, 50], [400, 50], [400, 50]]);
  // Values above the scale are clamped to the top, none below the bottom.
  const clamped = stepPoints({ t: [0, 10], bytes: [9000, -5] }, v, 100, 4096);
  assert.deepEqual(clamped.map((p) => p[1]), [0, 0, 100]);
});

test('the peak label and the hover readout in human units', () => {
  const series: MemorySeries = {
    device: 0, name: 'cpu:0', ...s, events: 3, downsampled: false, window_max: { bytes: 4096, t: 100 },
    peak: { bytes: 3 * 1024 * 1024, t: 100, op: 'rmsnorm naive > mul', start_bytes: 0, end_bytes: 2048, allocs: 2, frees: 1 },
  };
  assert.equal(peakLabel(series.peak), 'peak 3 MiB');
  assert.equal(readout(series, 120), 'cpu:0: 4 KiB allocated at 120 ns');
  assert.equal(readout(series, 1e9), null);
});
