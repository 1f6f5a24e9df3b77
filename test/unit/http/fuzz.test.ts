/**
 * Fuzzing the public listener (a small run; `npx tsx scripts/fuzz.ts` runs ≥ 100,000 requests).
 * A real server process, well-framed random requests checked against an exact oracle, malformed
 * framing over raw sockets; never a 5xx, never a crash, never a hang. FUZZ_SEED / FUZZ_REQUESTS
 * override the defaults; the seed is printed so a failure can be replayed.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { runFuzz, startFuzzTarget, type FuzzTarget } from '../../helpers/fuzz.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() % 2 ** 31;
const requests = process.env.FUZZ_REQUESTS ? Number(process.env.FUZZ_REQUESTS) : 2000;
let target: FuzzTarget;

before(async () => {
  target = await startFuzzTarget();
});
after(async () => {
  const code = await target?.close();
  assert.equal(code, 0, 'the server stops cleanly after the fuzzing');
});

it(`${requests} fuzzed requests: contract answers only, no 5xx, no crash, no hang (seed ${seed})`, async (t) => {
  t.diagnostic(
    `fuzz seed ${seed}; reproduce: FUZZ_SEED=${seed} FUZZ_REQUESTS=${requests} node --import tsx --test test/unit/http/fuzz.test.ts`,
  );
  const stats = await runFuzz(target, { requests, seed });
  t.diagnostic(JSON.stringify(stats));
  assert.ok(stats.requests >= requests);
  assert.ok(!Object.keys(stats.statuses).some((s) => s.startsWith('5')));
  assert.ok((stats.statuses['200'] ?? 0) > requests / 20, 'a share of requests reaches the search');
});
