/**
 * Reload memory (issue 10): a server holding one organization is made to reload N times by
 * switching the embedded store's CURRENT pointer between the two versions it keeps, then
 * POST /admin/reload. Prints RSS when ready, after each reload (settled), and the peak sampled
 * every 10 ms during each reload. Needs DATA_DIR (argv[2]) holding one organization published
 * at least twice. Run: [SERVER_THREADS=N] node --import tsx bench/reload-memory.ts DATA_DIR [reloads=20]
 * Two imports of the same files give two versions of the same content: such reloads keep the
 * index in service (peak ~1.1x); import different data the second time to measure a full reload.
 * (SERVER_THREADS defaults to 1 here, the figures of issue 10)
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { snapshotFile } from '../src/store/embedded-snapshot-store.js';
import { parseManifest } from '../src/store/snapshot-format.js';
import { mib, procStatus, startServer } from './helpers.js';

const dataDir = path.resolve(process.argv[2]);
const reloads = Number(process.argv[3] ?? 20);
const org = readdirSync(path.join(dataDir, 'snapshots')).find((d) => /^[0-9a-f-]{36}$/.test(d))!;
const pointerFile = path.join(dataDir, 'snapshots', org, 'CURRENT');
const pointer = JSON.parse(readFileSync(pointerFile, 'utf8')) as { version: number; previous: number };
if (!pointer.previous) throw new Error('reload-memory: publish the organization twice first');

// Whether the two versions hold the same content (a re-import of unchanged data): such a reload
// is verified and keeps the index in service (IndexBuilder.load), so it reads as its own case.
const digests = [pointer.previous, pointer.version].map((version) => {
  const bytes = readFileSync(snapshotFile(dataDir, { organizationId: org, version }));
  const length = bytes.readUInt32BE(bytes.length - 12);
  const at = bytes.length - 12 - length;
  return parseManifest(bytes.subarray(at, at + length), { organizationId: org, version }).digest ?? null;
});
const sameContent = digests[0] !== null && digests[0] === digests[1];
console.log(
  `versions ${pointer.previous} and ${pointer.version}: ${sameContent ? 'the same content (digests equal)' : 'different content, or written before content digests'}`,
);

const server = await startServer(
  {
    DATA_DIR: dataDir,
    ...(process.env.INDEX_BUILD_THREAD ? { INDEX_BUILD_THREAD: process.env.INDEX_BUILD_THREAD } : {}),
    // Serving threads (issue 12): every thread must release the replaced sections too.
    SERVER_THREADS: process.env.SERVER_THREADS ?? '1',
  },
  { logLevel: 'warn', logFile: path.join(dataDir, 'server.log') },
);
const pid = server.child.pid!;
await new Promise((r) => setTimeout(r, 2000));
const steady = procStatus(pid).vmRss;
console.log(`ready in ${(server.readyMs / 1000).toFixed(2)} s; steady RSS ${mib(steady)} MiB`);
const rows: string[] = [];
let worstPeak = 0;
for (let i = 1; i <= reloads; i++) {
  const [a, b] = i % 2 === 1 ? [pointer.previous, pointer.version] : [pointer.version, pointer.previous];
  writeFileSync(pointerFile, JSON.stringify({ version: a, previous: b }));
  let peak = 0,
    sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, procStatus(pid).vmRss);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const t0 = performance.now();
  const res = await fetch(`${server.adminUrl}/admin/reload`, { method: 'POST' });
  const body = (await res.json()) as { reloaded: unknown[] };
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 1500));
  sampling = false;
  await sampler;
  const after = procStatus(pid).vmRss;
  const metrics = await (await fetch(`${server.adminUrl}/metrics`)).text();
  const ext = /^nodejs_external_memory_bytes (\S+)/m.exec(metrics)?.[1];
  const heap = /^nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1];
  if (process.env.SHOW_EXTERNAL)
    console.log(`reload ${i}: external ${mib(Number(ext))} MiB, heap used ${mib(Number(heap))} MiB`);
  worstPeak = Math.max(worstPeak, peak);
  rows.push(`| ${i} | ${body.reloaded.length} | ${ms.toFixed(0)} | ${mib(peak)} | ${mib(after)} |`);
}
writeFileSync(pointerFile, JSON.stringify(pointer));
console.log(
  '| reload | reloaded | ms | peak RSS MiB | RSS 1.5 s after MiB |\n|---|---|---|---|---|\n' + rows.join('\n'),
);
console.log(`steady ${mib(steady)} MiB, worst peak ${mib(worstPeak)} MiB = ${(worstPeak / steady).toFixed(2)}x steady`);
await server.stop();
