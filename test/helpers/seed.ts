/**
 * The seed of a randomized test file: `envVar` when set, else `fallback` (a fixed seed) or a fresh
 * one. It is printed with a one-line reproduce command before any case runs, so a failure in CI
 * can be replayed exactly.
 */
export function testSeed(envVar: string, file: string, fallback: number = Date.now() % 2 ** 31): number {
  const raw = process.env[envVar];
  const seed = raw !== undefined ? Number(raw) : fallback;
  console.log(`${file} seed ${seed} (reproduce: ${envVar}=${seed} node --import tsx --test ${file})`);
  return seed;
}
