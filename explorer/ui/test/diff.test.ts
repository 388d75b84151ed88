import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type DiffRow, formatChange, formatSignedBytes, rowsWithStatus } from '../src/diff';

const row = (name: string, status: DiffRow['status'], ns: number): DiffRow => ({
  name, kind: 'op', status, in_a: status !== 'added', in_b: status !== 'removed', a_calls: 1, b_calls: 1, delta_calls: 0,
  a_self_cpu_ns: 0, b_self_cpu_ns: 0, a_cpu_total_ns: status === 'removed' ? ns : 0, b_cpu_total_ns: status === 'added' ? ns : 0,
  delta_cpu_total_ns: 0, a_self_device_ns: 0, b_self_device_ns: 0, a_device_total_ns: 0, b_device_total_ns: 0,
  delta_self_device_ns: 0, delta_self_cpu_ns: 0, delta_device_total_ns: 0, a_bytes: 0, b_bytes: 0, delta_bytes: 0, a_flops: 0, b_flops: 0,
});

test('rows of one status, heaviest first', () => {
  const rows = [row('mul', 'removed', 10), row('rms_norm', 'added', 5), row('pow', 'removed', 30), row('add', 'changed', 99)];
  assert.deepEqual(rowsWithStatus(rows, 'removed').map((r) => r.name), ['pow', 'mul']);
  assert.deepEqual(rowsWithStatus(rows, 'added').map((r) => r.name), ['rms_norm']);
  assert.deepEqual(rowsWithStatus(rows, 'same'), []);
});

test('changes read as signed percents and bytes', () => {
  assert.equal(formatChange(200, 150), '−25%');
  assert.equal(formatChange(100, 112.34), '+12.3%');
  assert.equal(formatChange(100, 350), '+250%');
  assert.equal(formatChange(0, 5), 'new');
  assert.equal(formatChange(0, 0), '0%');
  assert.equal(formatChange(7, 7), '0%');
  assert.equal(formatSignedBytes(2048), '+2 KiB');
  assert.equal(formatSignedBytes(-512), '−512 B');
  assert.equal(formatSignedBytes(0), '0');
});
