import assert from 'node:assert/strict';
import { test } from 'node:test';
import { within } from '../../../src/runtime/within.js';

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

test('within: the work finishing first gives its value', async () => {
  assert.equal(await within(after(5, 'done'), 1_000, () => 'late'), 'done');
});

test('within: past the deadline gives late()', async () => {
  assert.equal(await within(after(1_000, 'done'), 5, () => 'late'), 'late');
});

test('within: late() throwing rejects with its error', async () => {
  await assert.rejects(
    within(after(1_000, 'done'), 5, () => {
      throw new Error('timed out');
    }),
    /timed out/,
  );
});

test('within: the work rejecting first rejects with its error', async () => {
  const failing = after(5, null).then(() => {
    throw new Error('refused');
  });
  await assert.rejects(
    within(failing, 1_000, () => 'late'),
    /refused/,
  );
});

test('within: a finished wait leaves no timer holding the process', async () => {
  const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  await within(Promise.resolve(1), 60_000, () => 0);
  const now = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  assert.equal(now, before);
});
