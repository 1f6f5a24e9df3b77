/** `npm run bench`: runs every benchmark of bench/ in turn (each prints a Markdown table). */
import { spawnSync } from 'node:child_process';

const passThrough = process.argv.slice(2);
for (const file of ['bench/search.bench.ts']) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', file, ...passThrough], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
