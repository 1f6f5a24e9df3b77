import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import { shrinkHeap } from '../../../src/runtime/collect-garbage.js';

const MiB = 1024 * 1024;

function newSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;
}

test('shrinkHeap gives back the young generation a start grew, as V8 does ~8 s later', async () => {
  // Objects that survive their scavenges (as a start's modules do) grow the young generation.
  const kept: { i: number; s: string }[] = [];
  for (let i = 0; i < 300_000; i++) kept.push({ i, s: `x${i}` });
  const grown = newSpaceBytes();
  assert.ok(grown >= 4 * MiB, `the young generation grew to ${grown / MiB} MiB only`);
  await shrinkHeap();
  const after = newSpaceBytes();
  // (its initial size: 1 MiB on 64-bit Node 20; a plain gc() left it as grown)
  assert.ok(after <= 2 * MiB, `young generation ${after / MiB} MiB after shrinkHeap, ${grown / MiB} before`);
  assert.equal(kept.length, 300_000);
});
