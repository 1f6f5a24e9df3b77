/**
 * `npx tsx scripts/fuzz.ts [--requests N] [--seed S]`: fuzzes the public listener of a real server
 * process (see test/helpers/fuzz.ts) with N requests (default 100,000), prints the seed, the
 * counts per status and outcome, and a line that reproduces the run. Exit 1 on any violation.
 */
import { parseArgs } from 'node:util';
import { runFuzz, startFuzzTarget } from '../test/helpers/fuzz.js';

const { values } = parseArgs({
  options: { requests: { type: 'string' }, seed: { type: 'string' }, 'raw-share': { type: 'string' } },
});
const requests = values.requests === undefined ? 100_000 : Number(values.requests);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
const rawShare = values['raw-share'] === undefined ? 0.1 : Number(values['raw-share']);
if (
  !Number.isSafeInteger(requests) ||
  requests < 1 ||
  !Number.isSafeInteger(seed) ||
  !(rawShare >= 0 && rawShare <= 1)
) {
  console.error('usage: npx tsx scripts/fuzz.ts [--requests N] [--seed S] [--raw-share 0..1]');
  process.exit(2);
}
const reproduce = `npx tsx scripts/fuzz.ts --requests ${requests} --seed ${seed}${values['raw-share'] ? ` --raw-share ${rawShare}` : ''}`;
console.log(`fuzz: seed ${seed}, ${requests} requests`);
const target = await startFuzzTarget();
let failed = false;
try {
  const stats = await runFuzz(target, { requests, seed, rawShare, log: (l) => console.log(l) });
  console.log(
    `fuzz: ${stats.requests} requests in ${stats.seconds.toFixed(1)} s (${stats.framed} well-framed, ${stats.raw} malformed framing)`,
  );
  console.log(`fuzz: statuses ${JSON.stringify(Object.fromEntries(Object.entries(stats.statuses).sort()))}`);
  console.log(
    `fuzz: malformed framing without an answer: ${stats.rawClosed} closed by uWS, ${stats.rawSilent} left waiting by uWS (closed at its idle timeout)`,
  );
  console.log(`fuzz: malformed by kind [answered, closed, silent]: ${JSON.stringify(stats.rawByKind)}`);
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : err);
} finally {
  const code = await target.close();
  if (code !== 0) {
    failed = true;
    console.error(`fuzz: the server exited with ${code} on SIGTERM`);
  }
}
console.log(`fuzz: ${failed ? 'FAILED' : 'ok'}; reproduce: ${reproduce}`);
process.exit(failed ? 1 : 0);
