/**
 * A/B of two versions of the query path inside one process (not part of `npm run bench`):
 *
 *   git worktree add /tmp/base <commit>          # the version to compare against
 *   ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   node --import tsx bench/ab-query.ts --base /tmp/base --q 'q=que|keywords=a,b,c' [--seconds 10]
 *     [--ids uuid] [--unpacked-base] [--base-build] [--processes N]
 *
 * On this 2-core VM the same build measured up to 2× apart from one process to the next (see
 * bench/RESULTS.md, sessions 20-22), so two runs of the search bench cannot show a 10% change.
 * Here both versions' `searchBody` run in one process, on one index, in alternating blocks of
 * requests: the machine's drift falls on both alike. Each version is its own module instance
 * (its own scratch and output buffer). The index is built by this tree: the base must read the
 * same layout (a change to the query path, not to the index), or, with `--base-build`, the base
 * reads an index of its own build (the same data). Before timing, every request's body
 * is compared between the two: a difference stops the run.
 *
 * `--processes N` repeats the whole run in N fresh processes, one after the other, and prints each
 * one's difference and their median: a process's JIT can favour one version by itself (identical
 * code read −4.6% to +6.4% from one process to the next in session 23), so one process proves
 * little below ~5%.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateRecords } from '../scripts/gen-lib.js';
import { buildIndex } from '../src/index/build.js';
import type { OrgIndex } from '../src/index/org-index.js';
import { OrgDataBuilder } from '../src/model/org-data-builder.js';
import { searchBody as headSearch } from '../src/query/execute.js';
import { parseSearchParams } from '../src/request/parse-params.js';
import type { SearchRequest } from '../src/request/search-request.js';
import { parseRfc3339 } from '../src/time/rfc3339.js';
import { flagBool, flagNumber, flagString } from './helpers.js';

type Search = (index: OrgIndex | null, req: SearchRequest) => Uint8Array;

const processes = flagNumber('processes', 1);
if (processes > 1) {
  // the parent: N children of this very command, each with --processes 1, read back as JSON
  const args = process.argv.slice(2);
  const i = args.indexOf('--processes');
  args.splice(i, 2, '--json');
  const runs: Array<Array<{ q: string; baseUs: number; headUs: number }>> = [];
  for (let r = 0; r < processes; r++) {
    const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1], ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1 << 24,
    });
    if (child.status !== 0) throw new Error(`ab-query: process ${r + 1} exited ${child.status}`);
    runs.push(JSON.parse(child.stdout.trim().split('\n').pop()!));
  }
  const pct = (x: { baseUs: number; headUs: number }) => (100 * (x.headUs - x.baseUs)) / x.baseUs;
  for (const [k, first] of runs[0].entries()) {
    const each = runs.map((run) => pct(run[k]));
    const sorted = [...each].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    console.log(
      `${first.q}: this tree against base ${each.map((x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`).join(' / ')} in ${processes} processes, median ${median >= 0 ? '+' : ''}${median.toFixed(1)}%`,
    );
  }
  process.exit(0);
}
const json = flagBool('json');
const results: Array<{ q: string; baseUs: number; headUs: number }> = [];

const base = flagString('base', '');
if (base === '') throw new Error('ab-query: --base DIR (a checkout of the version to compare, e.g. a git worktree)');
const seconds = flagNumber('seconds', 10);
const block = flagNumber('block', 50);
const queries = flagString('q', 'q=que').split('|');

const baseModule = (await import(pathToFileURL(path.resolve(base, 'src/query/execute.ts')).href)) as {
  searchBody: Search;
};
const baseSearch = baseModule.searchBody;

let builder: OrgDataBuilder | null = null;
for (const r of generateRecords({
  messages: flagNumber('messages', 1_000_000),
  contacts: flagNumber('contacts', 20_000),
  organizations: 1,
  seed: 42,
  ids: flagString('ids', 'short') === 'uuid' ? 'uuid' : 'short',
})) {
  if (r.kind === 'contact') (builder ??= new OrgDataBuilder(r.contact.organization_id)).addContact(r.contact);
  else builder!.addMessage(r.message, parseRfc3339(r.message.sent_at)!);
}
const data = builder!.build();
const index = buildIndex(data);
// --unpacked-base: the base reads an index of every id as text (what builds before packed ids
// wrote; src/index/packed-uuid.ts), this tree its own: with `--ids uuid`, what packing costs a
// request (the base is then usually this tree itself: `--base .`)
// --base-build: the base reads an index its own build made, for a base of another index layout
// (e.g. before block-starts.ts): its query code cannot read this tree's index
const baseBuild = flagBool('base-build')
  ? ((await import(pathToFileURL(path.resolve(base, 'src/index/build.ts')).href)) as { buildIndex: typeof buildIndex })
      .buildIndex
  : null;
const baseIndex =
  baseBuild !== null ? baseBuild(data) : flagBool('unpacked-base') ? buildIndex(data, { packIds: false }) : index;

for (const q of queries) {
  const parsed = parseSearchParams(`organization_id=${data.organizationId}&${q}`);
  if (!parsed.ok) throw new Error(`ab-query: ${q}: ${JSON.stringify(parsed.details)}`);
  const req = parsed.request;
  // the bodies are views of each version's own buffer: copy one before the other writes
  const a = Buffer.from(baseSearch(baseIndex, req));
  const b = Buffer.from(headSearch(index, req));
  if (!a.equals(b))
    throw new Error(`ab-query: ${q}: the two versions' bodies differ (${a.length} and ${b.length} bytes)`);
  const total = [0, 0];
  const runs = [0, 0];
  const end = performance.now() + seconds * 1000;
  for (let turn = 0; performance.now() < end; turn ^= 1) {
    const search = turn === 0 ? baseSearch : headSearch;
    const target = turn === 0 ? baseIndex : index;
    const t0 = performance.now();
    for (let i = 0; i < block; i++) search(target, req);
    total[turn] += performance.now() - t0;
    runs[turn] += block;
  }
  const [baseUs, headUs] = [0, 1].map((t) => (1000 * total[t]) / runs[t]);
  results.push({ q, baseUs, headUs });
  if (json) continue;
  console.log(
    `${q}: base ${baseUs.toFixed(1)} µs, this tree ${headUs.toFixed(1)} µs (${((100 * (headUs - baseUs)) / baseUs).toFixed(1)}%), ${runs[0] + runs[1]} requests, same ${a.length}-byte body`,
  );
}
if (json) console.log(JSON.stringify(results));
