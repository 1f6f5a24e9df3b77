/**
 * `npx tsx scripts/differential.ts --data DIR [--requests N] [--seed S] [--store embedded|redis|both] [--threads N]`
 *
 * The answers of the real, compiled server against the brute-force reading of CONTRACT 1-3
 * (test/reference/), at the scale of a real export: the tests compare whole bodies on thousands of
 * small datasets, this compares them on one large one (1M messages and more), where only size
 * reaches some paths (postings split in far blocks, frequent pairs, top lists, summaries).
 *
 * For each store: a fresh store (a temp folder, or a throwaway redis-server on a free port), DIR's
 * NDJSON imported with the compiled import CLI, a key made with the keys CLI, `dist/main.js` started
 * (`npm run build` first), then N generated requests (test/helpers/e2e.ts: terms as integrators
 * write them, phrases, several terms, filters, pages, in every parameter form) sent one at a time,
 * and each body compared, character for character, with JSON.stringify of the reference's answer. The
 * reference scans every message for each request (~2 s a request at 1M) and holds every record
 * as an object: give node a larger heap for 10M (`node --max-old-space-size=16000 --import tsx …`).
 *
 * Prints a line per store (requests, how many found something, mismatches, time) and, for each
 * mismatch (at most 5 a store), the query and where the text first differs. Exit 0 when every
 * answer matched, 1 when one did not, 2 on a usage error.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import type { Contact, MessageLine } from '../src/model/records.js';
import type { SearchResponse } from '../src/request/search-request.js';
import {
  expected,
  generateRequest,
  openHarness,
  organizationsOf,
  type StoreHarness,
  search,
  type Vocabulary,
  vocabulary,
} from '../test/helpers/e2e.js';
import { createKey, type RunningServer, runProcess, startServer } from '../test/helpers/server.js';
import { mulberry32 } from './gen-lib.js';

const USAGE =
  'usage: npx tsx scripts/differential.ts --data DIR [--requests N] [--seed S] [--store embedded|redis|both] [--threads N]';

function usage(problem: string): never {
  console.error(`differential: ${problem}\n${USAGE}`);
  process.exit(2);
}

/** An integer option of at least `min` (valibot, as every input shape of the project). */
const integer = (name: string, min: number) =>
  v.pipe(
    v.string(),
    v.check(
      (raw) => /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw)) && Number(raw) >= min,
      (issue) => `--${name} must be an integer of at least ${min}, got ${JSON.stringify(issue.input)}`,
    ),
    v.transform(Number),
  );

const ArgsSchema = v.object({
  data: v.pipe(
    v.optional(v.string(), ''),
    v.minLength(1, '--data DIR is required (a folder with contacts.ndjson and messages.ndjson)'),
  ),
  requests: v.optional(integer('requests', 1), '200'),
  // 0 is a seed like any other: the default can draw it, and the reproduce line must replay it
  seed: v.optional(integer('seed', 0), () => String(Date.now() % 2 ** 31)),
  threads: v.optional(integer('threads', 1), '1'),
  store: v.optional(
    v.picklist(
      ['embedded', 'redis', 'both'],
      (issue) => `--store must be embedded, redis or both, got ${JSON.stringify(issue.input)}`,
    ),
    'both',
  ),
});

const OPTIONS = {
  data: { type: 'string' },
  requests: { type: 'string' },
  seed: { type: 'string' },
  store: { type: 'string' },
  threads: { type: 'string' },
} as const;
let raw: Record<string, string | undefined> = {};
try {
  raw = parseArgs({ options: OPTIONS }).values;
} catch (err) {
  usage((err as Error).message);
}
const parsed = v.safeParse(ArgsSchema, raw, { abortEarly: true });
if (!parsed.success) usage(parsed.issues[0].message);
const { data: dataDir, requests, seed, threads, store: storeArg } = parsed.output;
const stores = storeArg === 'both' ? (['embedded', 'redis'] as const) : [storeArg];

/** An NDJSON file's records, read a line at a time (a 10M export is past one string's size). */
async function readRecords<T>(file: string): Promise<T[]> {
  const out: T[] = [];
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) if (line.trim() !== '') out.push(JSON.parse(line) as T);
  return out;
}

const contactsFile = path.join(dataDir, 'contacts.ndjson'),
  messagesFile = path.join(dataDir, 'messages.ndjson');
let data: { contacts: Contact[]; messages: MessageLine[] };
try {
  data = { contacts: await readRecords<Contact>(contactsFile), messages: await readRecords<MessageLine>(messagesFile) };
} catch (err) {
  console.error(`differential: cannot read ${dataDir}: ${(err as Error).message}`);
  process.exit(2);
}
const orgs = organizationsOf(data);
if (orgs.length === 0) usage(`${dataDir} holds no contacts`);
console.log(
  `differential: ${data.messages.length} messages, ${data.contacts.length} contacts, ${orgs.length} organization(s); seed ${seed}, ${requests} requests a store, SERVER_THREADS=${threads}`,
);
const vocab = new Map<string, Vocabulary>(orgs.map((o) => [o, vocabulary(data.messages, o)]));

/** Where two bodies first differ, with some text either side of both. */
function firstDifference(got: string, want: string): string {
  let i = 0;
  while (i < got.length && i < want.length && got[i] === want[i]) i++;
  const at = Math.max(0, i - 60);
  return `character ${i} of ${got.length} (reference ${want.length}):\n  server:    …${got.slice(at, i + 60)}…\n  reference: …${want.slice(at, i + 60)}…`;
}

let retried = 0;

/**
 * search(), sent again once when the connection fails before an answer. The reference blocks this
 * process's event loop for seconds between requests, past fetch's own keep-alive timeout (4 s):
 * fetch may then hand the request to a connection its overdue timer closes at that moment
 * ("other side closed"; reproduced with a busy loop of 5 s between requests on a server that
 * closes idle connections after ~11 s). A GET is safe to send again; the count is printed.
 */
async function searchRetryingOnce(
  base: string,
  key: string,
  query: string,
  i: number,
): Promise<{ status: number; text: string }> {
  try {
    return await search(base, key, query);
  } catch {
    retried++;
  }
  try {
    return await search(base, key, query);
  } catch (err) {
    throw new Error(`request ${i} (?${query}): ${(err as Error).message}`, { cause: (err as Error).cause });
  }
}

async function runStore(name: 'embedded' | 'redis'): Promise<number> {
  const t0 = Date.now();
  let h: StoreHarness | undefined;
  let server: RunningServer | undefined;
  let mismatches = 0;
  retried = 0;
  try {
    h = await openHarness(name);
    // the compiled import CLI, given as long as a 10M import takes on a slow machine
    const imp = await runProcess(
      ['dist/cli/snapshot.js', 'import', '--contacts', contactsFile, '--messages', messagesFile, '--json'],
      h.env,
      30 * 60_000,
    );
    if (imp.code !== 0) throw new Error(`import exited ${imp.code}: ${imp.stderr}`);
    const key = await createKey(h.env, orgs, 'contacts:read,messages:read', ['--name', 'differential']);
    server = await startServer(
      { ...h.serverEnv, SERVER_THREADS: String(threads), LOG_LEVEL: 'warn' },
      { compiled: true },
    );
    console.log(`${name}: imported and ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const rng = mulberry32(seed);
    let found = 0;
    for (let i = 0; i < requests; i++) {
      const org = orgs[i % orgs.length];
      const g = generateRequest(rng, org, vocab.get(org)!);
      const res = await searchRetryingOnce(server.url, key.key, g.query, i);
      const want: SearchResponse = expected(data, g.request);
      if (want.data.length > 0) found++;
      const wanted = JSON.stringify(want);
      if (res.status === 200 && res.text === wanted) continue;
      mismatches++;
      if (mismatches <= 5)
        console.log(
          `${name}: MISMATCH request ${i} (status ${res.status}): ?${g.query}\n  ${res.status === 200 ? firstDifference(res.text, wanted) : res.text}`,
        );
    }
    console.log(
      `${name}: ${requests} requests, ${found} found something, ${mismatches} mismatch(es), ${retried} sent again after a closed connection, ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
  } finally {
    const code = await server?.stop();
    if (code !== undefined && code !== 0) {
      console.log(`${name}: the server exited ${code} on SIGTERM:\n${server?.output()}`);
      mismatches++;
    }
    await h?.cleanup();
  }
  return mismatches;
}

let failed = 0;
for (const s of stores) {
  try {
    failed += await runStore(s);
  } catch (err) {
    const cause = (err as Error).cause;
    console.error(
      `differential: ${s}: ${(err as Error).message}${cause instanceof Error ? ` (${cause.message})` : ''}`,
    );
    failed++;
  }
}
console.log(
  `differential: ${failed === 0 ? 'every answer matched' : `${failed} failure(s)`} (reproduce: npx tsx scripts/differential.ts --data ${dataDir} --requests ${requests} --seed ${seed} --store ${storeArg} --threads ${threads})`,
);
process.exit(failed === 0 ? 0 : 1);
