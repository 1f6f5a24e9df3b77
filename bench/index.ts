/**
 * `npm run bench`: runs every benchmark of bench/ in turn (each prints Markdown tables).
 * `npm run bench -- --only search|http|store[,...]` runs the named ones; other flags pass through
 * (e.g. `--messages N`, `--duration S`, `--big`).
 */
import { spawnSync } from 'node:child_process';

const BENCHES: Record<string, string> = {
  search: 'bench/search.bench.ts',
  http: 'bench/http.bench.ts',
  store: 'bench/store.bench.ts',
};

// The flags the three benches read (bench/*.bench.ts): anything else is a typo, refused rather
// than ignored while minutes of the full benchmark run.
const VALUE_FLAGS = [
  'messages',
  'contacts',
  'reference-iterations',
  'connections',
  'duration',
  'port',
  'rounds',
  'serial',
  'size',
  'threads',
  'warmup',
  'log-level',
  'serve',
  'reload-rate',
  'steady',
];
const BOOLEAN_FLAGS = ['no-ties', 'big', 'no-redis'];
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(
    `Usage: npm run bench [-- --only ${Object.keys(BENCHES).join('|')}[,...]] [flags passed to each bench]\n` +
      'Runs the benchmarks (1M messages by default; minutes each) and prints Markdown tables. Flags:\n' +
      '  --messages N, --contacts N, --duration S (http), --big (store: 10M too), --log-level LEVEL (http);\n' +
      `  all: ${[...VALUE_FLAGS.map((f) => `--${f} V`), ...BOOLEAN_FLAGS.map((f) => `--${f}`)].join(' ')}\n` +
      'Each bench file documents its own flags in its header: bench/*.bench.ts.\n',
  );
  process.exit(0);
}
let only = Object.keys(BENCHES);
const i = args.indexOf('--only');
if (i >= 0) {
  only = (args[i + 1] ?? '').split(',').filter((x) => x !== '');
  args.splice(i, 2);
  const unknown = only.filter((x) => !(x in BENCHES));
  if (only.length === 0 || unknown.length > 0) {
    process.stderr.write(
      `bench: --only takes ${Object.keys(BENCHES).join(', ')} (comma-separated), got ${JSON.stringify(unknown.join(',') || '')}\n`,
    );
    process.exit(2);
  }
}
for (let k = 0; k < args.length; k++) {
  const name = args[k].startsWith('--') ? args[k].slice(2) : null;
  if (name !== null && BOOLEAN_FLAGS.includes(name)) continue;
  if (name !== null && VALUE_FLAGS.includes(name) && k + 1 < args.length) {
    k++;
    // every value flag is a number but these two (a NaN ran the bench on "NaN messages")
    if (name === 'log-level' || name === 'serve' || Number.isFinite(Number(args[k]))) continue;
    process.stderr.write(`bench: --${name} takes a number, got ${JSON.stringify(args[k])}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `bench: unknown flag or missing value: ${JSON.stringify(args[k])} (npm run bench -- --help lists them)\n`,
  );
  process.exit(2);
}
for (const name of only) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', BENCHES[name], ...args], {
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
