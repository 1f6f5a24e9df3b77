/**
 * Search engine benchmark (issues 3, 10, 11): index build rate, bytes a message, and per-query-
 * class latency of what a request pays, the search plus its rendering to the 200 body's bytes,
 * compared in the same run with the brute-force reference scan. A last part builds the same
 * messages all stamped with one sent_at (bulk-migrated data) and times build and queries there.
 * Run: npm run bench -- --only search [--messages N] [--contacts M] [--reference-iterations K] [--no-ties]
 *
 * It runs on older commits too (copy it into their tree): where src/query/execute.ts has no
 * searchBody, a body is JSON.stringify(executeSearch(...)) encoded to UTF-8, as the server did.
 */
import { Bench } from 'tinybench';
import { generateRecords } from '../scripts/gen-lib.js';
import { buildIndex } from '../src/index/build.js';
import { contentBytesOf, rowOffsetsOf } from '../src/index/message-rows.js';
import { tokenFrequency, type OrgIndex } from '../src/index/org-index.js';
import { messageTokenIds } from '../src/index/token-seq.js';
import type { Contact, MessageLine, OrgData } from '../src/model/records.js';
import { OrgDataBuilder } from '../src/model/org-data-builder.js';
import * as execute from '../src/query/execute.js';
import { parseSearchParams } from '../src/request/parse-params.js';
import { sentAtOf } from '../src/index/sent-times.js';
import type { SearchRequest } from '../src/request/search-request.js';
import { parseRfc3339 } from '../src/time/rfc3339.js';
import { referenceSearch } from '../test/reference/brute-force.js';

function flag(name: string, def: number): number {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const MESSAGES = flag('messages', 1_000_000);
const CONTACTS = flag('contacts', 20_000);
const REF_ITER = flag('reference-iterations', 3);
const TIES = !process.argv.includes('--no-ties');

/** The 200 body's bytes, as the server produces them. */
const render: (index: OrgIndex | null, req: SearchRequest) => Uint8Array =
  (execute as { searchBody?: (index: OrgIndex | null, req: SearchRequest) => Uint8Array }).searchBody ??
  ((index, req) => Buffer.from(JSON.stringify(execute.executeSearch(index, req)), 'utf8'));
const countOf = (index: OrgIndex, req: SearchRequest): number =>
  (JSON.parse(Buffer.from(render(index, req)).toString()) as { pagination: { count: number } }).pagination.count;
const gc = (globalThis as { gc?: () => void }).gc;

function memory(): number {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external; // arrayBuffers is part of external
}

function us(ms: number | undefined): string {
  return ms === undefined ? 'n/a' : (ms * 1000).toFixed(1);
}

async function main(): Promise<void> {
  console.log(
    `# search benchmark: ${MESSAGES} messages, ${CONTACTS} contacts, 1 organization, node ${process.version}`,
  );
  let builder: OrgDataBuilder | null = null;
  const lines: MessageLine[] = [];
  const contacts: Contact[] = [];
  for (const r of generateRecords({ messages: MESSAGES, contacts: CONTACTS, organizations: 1, seed: 42 })) {
    if (r.kind === 'contact') {
      builder ??= new OrgDataBuilder(r.contact.organization_id);
      builder.addContact(r.contact);
      contacts.push(r.contact);
    } else {
      builder!.addMessage(r.message, parseRfc3339(r.message.sent_at)!);
      lines.push(r.message);
    }
  }
  const data = builder!.build();
  const orgId = data.organizationId;

  const t0 = performance.now();
  const index: OrgIndex = buildIndex(data);
  const buildMs = performance.now() - t0;
  console.log(
    `build: ${buildMs.toFixed(0)} ms, ${Math.round(MESSAGES / (buildMs / 1000)).toLocaleString('en')} messages/s`,
  );
  // The index keeps its own copy of everything (text as UTF-8 columns), so a second build while
  // the first is alive measures exactly one index's heap + external memory.
  const before = memory();
  const second: OrgIndex | null = buildIndex(data);
  const perIndex = memory() - before;
  const textBytes = contentBytesOf(index.msgRowBytes, rowOffsetsOf(index, index.messageCount));
  console.log(
    `index memory: ${(perIndex / MESSAGES).toFixed(1)} bytes/message in all, of which message text ${(textBytes / MESSAGES).toFixed(1)}, ` +
      `overhead beyond the text ${((perIndex - textBytes) / MESSAGES).toFixed(1)} (vocabulary ${index.tokenIds.size}, pairs ${index.pairIds.size}, ` +
      `stored postings ${index.storedPostings.length}, contact entries ${index.entryContact.length}, token sequence ${index.tokenSeqBytes.length} bytes)` +
      (gc ? '' : ' [run with --expose-gc for exact figures]'),
  );
  if (second.messageCount !== index.messageCount) throw new Error('bench: builds differ');

  // query terms chosen from the data: by document frequency
  const tokenIds = index.tokenIds as Map<string, number>; // built here: a Map
  const byDf = [...tokenIds]
    .map(([t, id]) => ({ t, df: tokenFrequency(index, id) }))
    .filter((x) => x.t.length >= 3 && !/^\d+$/.test(x.t))
    .sort((a, b) => b.df - a.df);
  const common = byDf[0].t;
  const rare = byDf.find((x) => x.df <= 20)?.t ?? byDf[byDf.length - 1].t;
  const mid = byDf.slice(20, 40).map((x) => x.t);
  // a frequent adjacent pair from the first messages' token sequences
  const inverse = new Array<string>(tokenIds.size);
  for (const [t, id] of tokenIds) inverse[id] = t;
  const [p0, p1] = messageTokenIds(index, 0);
  const phrase = `${inverse[p0]} ${inverse[p1]}`;
  const dateFrom = new Date(sentAtOf(index, Math.floor(MESSAGES * 0.6))).toISOString().slice(0, 10);
  const dateTo = new Date(sentAtOf(index, Math.floor(MESSAGES * 0.4))).toISOString().slice(0, 10);
  const enc = encodeURIComponent;
  const classes: Record<string, string> = {
    'common term': `q=${enc(common)}`,
    'rare term': `q=${enc(rare)}`,
    '2 terms all': `keywords=${enc(mid[0])},${enc(mid[1])}&match=all`,
    '3 terms all': `keywords=${enc(mid[2])},${enc(mid[3])},${enc(mid[4])}&match=all`,
    '3 terms any': `keywords=${enc(mid[5])},${enc(mid[6])},${enc(mid[7])}`,
    phrase: `q=${enc(phrase)}`,
    'channel + date filter': `q=${enc(mid[8])}&channel=whatsapp&from=${dateFrom}&to=${dateTo}`,
    'deep offset': `q=${enc(common)}&limit=100&offset=5000`,
    // direction defaults to inbound; these read the other newest-message paths of the index
    'common term, direction all': `q=${enc(common)}&direction=all`,
    'deep offset outbound': `q=${enc(common)}&direction=outbound&limit=100&offset=5000`,
    '10 common terms any, max limits': `keywords=${byDf
      .slice(0, 10)
      .map((x) => enc(x.t))
      .join(',')}&limit=100&messages_limit=20&direction=all`,
  };
  console.log(
    `queries: ${Object.entries(classes)
      .map(([name, q]) => `${name}: ${q}`)
      .join('; ')}`,
  );
  const requests: Record<string, SearchRequest> = {};
  for (const [name, q] of Object.entries(classes)) {
    const r = parseSearchParams(`organization_id=${orgId}&${q}`);
    if (!r.ok) throw new Error(`bench: bad query for ${name}: ${JSON.stringify(r.details)}`);
    requests[name] = r.request;
  }

  const bench = new Bench({ time: 400, warmupTime: 100 });
  for (const [name, req] of Object.entries(requests)) bench.add(`index: ${name}`, () => render(index, req));
  bench.add('parse: request parameters', () => parseSearchParams(`organization_id=${orgId}&${classes['2 terms all']}`));
  await bench.run();

  const ref = new Bench({ iterations: REF_ITER, time: 0, warmupTime: 0, warmupIterations: 0 });
  for (const name of ['common term', 'rare term', '3 terms any'])
    ref.add(`reference: ${name}`, () => referenceSearch(contacts, lines, requests[name]));
  await ref.run();

  console.log('\n| task | count of matching contacts | body bytes | p50 µs | p99 µs | mean µs | samples |');
  console.log('|---|---|---|---|---|---|---|');
  const counts: Record<string, number> = {};
  const sizes: Record<string, number> = {};
  for (const [name, req] of Object.entries(requests)) {
    counts[name] = countOf(index, req);
    sizes[name] = render(index, req).byteLength;
  }
  for (const t of [...bench.tasks, ...ref.tasks]) row(t, counts, sizes);

  if (TIES)
    await ties(
      data,
      buildMs,
      Object.fromEntries(
        ['common term', 'rare term', '3 terms any', 'deep offset', '10 common terms any, max limits'].map((n) => [
          n,
          requests[n],
        ]),
      ),
    );
}

function row(
  t: { name: string; result?: unknown },
  counts: Record<string, number>,
  sizes: Record<string, number>,
): void {
  const r = t.result as { latency?: { p50?: number; p99?: number; mean?: number; samplesCount?: number } } | undefined;
  const name = t.name.replace(/^(index|reference|tied): /, '');
  console.log(
    `| ${t.name} | ${counts[name] ?? ''} | ${sizes[name] ?? ''} | ${us(r?.latency?.p50)} | ${us(r?.latency?.p99)} | ${us(r?.latency?.mean)} | ${r?.latency?.samplesCount ?? ''} |`,
  );
}

/** Every message stamped with one sent_at: build time against distinct times, and query latency. */
async function ties(data: OrgData, distinctBuildMs: number, requests: Record<string, SearchRequest>): Promise<void> {
  const stamp = data.messages.sentAt[0];
  const tied: OrgData = {
    ...data,
    messages: { ...data.messages, sentAt: new Float64Array(data.messages.count).fill(stamp) },
  };
  const t0 = performance.now();
  const index = buildIndex(tied);
  const buildMs = performance.now() - t0;
  console.log(
    `\nties: ${MESSAGES} messages with one sent_at: build ${buildMs.toFixed(0)} ms, ` +
      `${(buildMs / distinctBuildMs).toFixed(2)}x the distinct-time build (${distinctBuildMs.toFixed(0)} ms)`,
  );
  const bench = new Bench({ time: 400, warmupTime: 100 });
  for (const [name, req] of Object.entries(requests)) bench.add(`tied: ${name}`, () => render(index, req));
  await bench.run();
  const counts: Record<string, number> = {};
  const sizes: Record<string, number> = {};
  for (const [name, req] of Object.entries(requests)) {
    counts[name] = countOf(index, req);
    sizes[name] = render(index, req).byteLength;
  }
  console.log('\n| task | count of matching contacts | body bytes | p50 µs | p99 µs | mean µs | samples |');
  console.log('|---|---|---|---|---|---|---|');
  for (const t of bench.tasks) row(t, counts, sizes);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
