/**
 * Helpers for the end-to-end, reload and fault tests: store harnesses (embedded and real Redis),
 * the real CLIs (gen, snapshot import, reload), NDJSON data, and a generator of search requests
 * paired with the brute-force reference's answer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Contact, MessageLine } from '../../src/model/records.js';
import { CHANNELS } from '../../src/model/records.js';
import type { SearchRequest, SearchResponse } from '../../src/request/search-request.js';
import { parseRfc3339 } from '../../src/time/rfc3339.js';
import { referenceSearch, referenceTerms, referenceTokens } from '../reference/brute-force.js';
import { startCluster, type TestCluster } from './redis-cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';
import { baseEnv, runNode, type RunResult } from './server.js';

export type Rng = () => number;

/** A fresh temp folder; `cleanup` removes it. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** One store for a whole suite: the environment the server and every CLI get. */
export interface StoreHarness {
  name: 'embedded' | 'redis' | 'cluster';
  env: NodeJS.ProcessEnv;
  /** extra server env (REDIS_URL or DATA_DIR) */
  serverEnv: Record<string, string>;
  redis: TestRedis | null;
  /** the local Redis Cluster (3 masters, 3 replicas) of a 'cluster' harness */
  cluster?: TestCluster;
  cleanup(): Promise<void>;
}

export async function openHarness(name: 'embedded' | 'redis' | 'cluster'): Promise<StoreHarness> {
  if (name === 'embedded') {
    const d = tempDir('e2e-data-');
    return {
      name,
      env: baseEnv({ DATA_DIR: d.dir }),
      serverEnv: { DATA_DIR: d.dir },
      redis: null,
      async cleanup() {
        d.cleanup();
      },
    };
  }
  if (name === 'cluster') {
    const cluster = await startCluster();
    const d = tempDir('e2e-cluster-data-');
    return {
      name,
      env: baseEnv({ REDIS_URL: cluster.url, DATA_DIR: d.dir }),
      serverEnv: { REDIS_URL: cluster.url, DATA_DIR: d.dir },
      redis: null,
      cluster,
      async cleanup() {
        await cluster.stop();
        d.cleanup();
      },
    };
  }
  const redis = await startRedis();
  // DATA_DIR too, pointing at an empty folder: nothing may be written to ./data by accident.
  const d = tempDir('e2e-redis-data-');
  return {
    name,
    env: baseEnv({ REDIS_URL: redis.url, DATA_DIR: d.dir }),
    serverEnv: { REDIS_URL: redis.url, DATA_DIR: d.dir },
    redis,
    async cleanup() {
      await redis.stop();
      d.cleanup();
    },
  };
}

/** `npm run gen` (scripts/gen.ts) into `out`. */
export async function gen(
  out: string,
  opts: { messages: number; contacts: number; organizations: number; seed: number },
): Promise<void> {
  const r = await runNode(
    'scripts/gen.ts',
    [
      '--messages',
      String(opts.messages),
      '--contacts',
      String(opts.contacts),
      '--organizations',
      String(opts.organizations),
      '--seed',
      String(opts.seed),
      '--out',
      out,
    ],
    baseEnv({}),
    120_000,
  );
  assert.equal(r.code, 0, `gen failed: ${r.stderr}`);
}

export interface Dataset {
  contacts: Contact[];
  messages: MessageLine[];
  contactsFile: string;
  messagesFile: string;
}

export function readNdjson<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

export function loadDataset(dir: string): Dataset {
  const contactsFile = path.join(dir, 'contacts.ndjson'),
    messagesFile = path.join(dir, 'messages.ndjson');
  return { contacts: readNdjson(contactsFile), messages: readNdjson(messagesFile), contactsFile, messagesFile };
}

/** Writes a dataset as NDJSON into `dir`. */
export function writeDataset(
  dir: string,
  contacts: Contact[],
  messages: MessageLine[],
  extraMessageLines: string[] = [],
): Dataset {
  const contactsFile = path.join(dir, 'contacts.ndjson'),
    messagesFile = path.join(dir, 'messages.ndjson');
  writeFileSync(contactsFile, contacts.map((c) => JSON.stringify(c)).join('\n') + '\n');
  writeFileSync(messagesFile, [...messages.map((m) => JSON.stringify(m)), ...extraMessageLines].join('\n') + '\n');
  return { contacts, messages, contactsFile, messagesFile };
}

/** The records of one organization of `d`, moved to organization `org` (new content for an existing organization). */
export function rehome(
  d: { contacts: Contact[]; messages: MessageLine[] },
  from: string,
  org: string,
): { contacts: Contact[]; messages: MessageLine[] } {
  return {
    contacts: d.contacts.filter((c) => c.organization_id === from).map((c) => ({ ...c, organization_id: org })),
    messages: d.messages.filter((m) => m.organization_id === from).map((m) => ({ ...m, organization_id: org })),
  };
}

export function organizationsOf(d: { contacts: Contact[] }): string[] {
  return [...new Set(d.contacts.map((c) => c.organization_id))];
}

/** A few words (the first of `n` messages each) every organization's messages really contain. */
export function wordsOf(d: Dataset, orgs: string[], n: number): Map<string, string[]> {
  return new Map(
    orgs.map((o) => [
      o,
      d.messages
        .filter((m) => m.organization_id === o)
        .slice(0, n)
        .map((m) => m.content.split(/\s+/).find((w) => /^\p{L}{3,}$/u.test(w)) ?? 'pedido'),
    ]),
  );
}

export function importCli(
  env: NodeJS.ProcessEnv,
  d: { contactsFile: string; messagesFile: string },
  more: string[] = [],
): Promise<RunResult> {
  return runNode(
    'src/cli/snapshot.ts',
    ['import', '--contacts', d.contactsFile, '--messages', d.messagesFile, ...more],
    env,
    120_000,
  );
}

export function reloadCli(env: NodeJS.ProcessEnv, args: string[] = []): Promise<RunResult> {
  return runNode('src/cli/reload.ts', ['--timeout', '20', ...args], env, 40_000);
}

// ---- search requests and the reference

export const SEARCH = '/contacts/message-search';

/** A search request with the contract's defaults (CONTRACT 4) but `terms`, and `over` on top. */
export function searchRequest(org: string, terms: string[], over: Partial<SearchRequest> = {}): SearchRequest {
  return {
    organizationId: org,
    terms,
    match: 'any',
    direction: 'inbound',
    channel: null,
    from: null,
    to: null,
    limit: 50,
    offset: 0,
    messagesLimit: 3,
    ...over,
  };
}

/** A generated request: its raw query string and the request the reference answers. */
export interface GeneratedRequest {
  query: string;
  request: SearchRequest;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));
const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Vocabulary of one organization: raw words as written (accents, case, punctuation) and adjacent token pairs. */
export interface Vocabulary {
  words: string[];
  pairs: string[];
  instants: number[];
}

export function vocabulary(messages: MessageLine[], org: string): Vocabulary {
  const words = new Set<string>(),
    pairs = new Set<string>(),
    instants: number[] = [];
  // 500 words in order of appearance, then the most frequent: the generator's vocabulary has a
  // long Zipf tail, and requests made of tail words alone would nearly all find nothing.
  const counts = new Map<string, number>();
  for (const m of messages) {
    if (m.organization_id !== org) continue;
    instants.push(parseRfc3339(m.sent_at)!);
    for (const w of m.content.split(/\s+/)) {
      if (w === '') continue;
      counts.set(w, (counts.get(w) ?? 0) + 1);
      if (words.size < 500) words.add(w);
    }
    const raw = m.content.split(/\s+/).filter((w) => referenceTokens(w).length === 1);
    for (let i = 0; i + 1 < raw.length && pairs.size < 5000; i++) pairs.add(`${raw[i]} ${raw[i + 1]}`);
  }
  for (const [w] of [...counts].sort((a, b) => b[1] - a[1])) {
    if (words.size >= 2000) break;
    words.add(w);
  }
  // An organization without messages (or without two adjacent words) still gets requests: terms
  // and dates that find nothing there, rather than picks from an empty list.
  if (words.size === 0) words.add('pedido');
  if (pairs.size === 0) pairs.add('meu pedido');
  if (instants.length === 0) instants.push(Date.UTC(2025, 0, 1));
  return { words: [...words], pairs: [...pairs], instants };
}

/** A `from`/`to` value in one of the CONTRACT 4 forms, and the instant it means. */
function instantParam(rng: Rng, around: number, isTo: boolean): { text: string; ms: number } {
  const t = around + int(rng, -3, 3) * 86_400_000 + int(rng, -7200, 7200) * 1000;
  const form = rng();
  if (form < 0.3) {
    const d = new Date(t);
    const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    return {
      text: `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
      ms: isTo ? day + 86_399_999 : day,
    };
  }
  const offset = pick(rng, [0, 0, -180, 60, 330, -300, 540]);
  const local = new Date(t + offset * 60_000);
  const [y, mo, d, h, mi, s] = [
    local.getUTCFullYear(),
    local.getUTCMonth(),
    local.getUTCDate(),
    local.getUTCHours(),
    local.getUTCMinutes(),
    local.getUTCSeconds(),
  ];
  let text = `${y}-${pad(mo + 1)}-${pad(d)}T${pad(h)}:${pad(mi)}`;
  let sec = 0,
    ms = 0;
  const precision = rng();
  if (precision > 0.2) {
    sec = s;
    text += `:${pad(s)}`;
    if (precision > 0.6) {
      const digits = Array.from({ length: int(rng, 1, 6) }, () => String(int(rng, 0, 9))).join('');
      ms = Number((digits + '00').slice(0, 3));
      text += `.${digits}`;
    }
  }
  if (offset === 0) text += pick(rng, ['Z', '+00:00', '']);
  else text += `${offset < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return { text, ms: Date.UTC(y, mo, d, h, mi, sec, ms) - offset * 60_000 };
}

/** Percent-encodes a value, spaces sometimes as `+` (form encoding). */
function enc(rng: Rng, s: string): string {
  const e = encodeURIComponent(s);
  return rng() < 0.5 ? e.replace(/%20/g, '+') : e;
}

/** One random valid request over organization `org` (see the test file for what it covers). */
export function generateRequest(rng: Rng, org: string, vocab: Vocabulary): GeneratedRequest {
  const term = (): string => {
    const r = rng();
    if (r < 0.5) return pick(rng, vocab.words);
    if (r < 0.8) return pick(rng, vocab.pairs);
    if (r < 0.85) return pick(rng, ['zzqx', 'x', '!!', '  Pedido  ', 'PREÇO', 'preco', 'segunda-via', 'Ação', 'ﬁm']);
    const w = pick(rng, vocab.words);
    return rng() < 0.5 ? w.toUpperCase() : w.normalize('NFD');
  };
  const params: [string, string][] = [['organization_id', rng() < 0.2 ? org.toUpperCase() : org]];
  let q: string | null = null,
    keywords: string | null = null;
  const keyword: string[] = [];
  const shape = rng();
  if (shape < 0.4 || shape >= 0.9) q = term();
  if ((shape >= 0.4 && shape < 0.75) || shape >= 0.95) {
    const n = int(rng, 1, 5);
    keywords = Array.from({ length: n }, term)
      .map((t) => t.replace(/[,;\r\n]/g, ''))
      .reduce((acc, t, i) => (i === 0 ? t : acc + pick(rng, [',', ';', '\n', '\r\n', ', ']) + t), '');
  }
  if (shape >= 0.75) for (let i = int(rng, 1, 4); i > 0; i--) keyword.push(term());
  // A term-less draw (all discarded): add one word that surely yields a term.
  if (referenceTerms(q, keywords, keyword).length === 0) keyword.push(pick(rng, vocab.pairs));
  if (q !== null && [...q].length > 200) q = [...q].slice(0, 200).join('');
  if (q !== null) params.push(['q', q]);
  if (keywords !== null) params.push(['keywords', keywords]);
  for (const k of keyword) params.push(['keyword', k]);

  const req = searchRequest(org, referenceTerms(q, keywords, keyword));
  if (rng() < 0.6) {
    req.match = pick(rng, ['any', 'all'] as const);
    params.push(['match', req.match]);
  }
  if (rng() < 0.6) {
    req.direction = pick(rng, ['inbound', 'outbound', 'all'] as const);
    params.push(['direction', req.direction]);
  }
  if (rng() < 0.3) {
    req.channel = pick(rng, CHANNELS);
    params.push(['channel', req.channel]);
  }
  if (rng() < 0.35) {
    let a = instantParam(rng, pick(rng, vocab.instants), false);
    let b = instantParam(rng, pick(rng, vocab.instants), true);
    for (let tries = 0; a.ms > b.ms && tries < 20; tries++) {
      a = instantParam(rng, pick(rng, vocab.instants), false);
      b = instantParam(rng, pick(rng, vocab.instants), true);
    }
    if (a.ms > b.ms)
      [a, b] = [
        { text: '2020-01-01', ms: Date.UTC(2020, 0, 1) },
        { text: '2030-12-31', ms: Date.UTC(2030, 11, 31, 23, 59, 59, 999) },
      ];
    const which = rng();
    if (which < 0.8) {
      req.from = a.ms;
      params.push(['from', a.text]);
    }
    if (which > 0.3) {
      req.to = b.ms;
      params.push(['to', b.text]);
    }
  }
  if (rng() < 0.5) {
    req.limit = int(rng, 1, 100);
    params.push(['limit', rng() < 0.1 ? '00' + req.limit : String(req.limit)]);
  }
  if (rng() < 0.3) {
    req.offset = rng() < 0.2 ? int(rng, 50, 500) : int(rng, 0, 20);
    params.push(['offset', String(req.offset)]);
  }
  if (rng() < 0.4) {
    req.messagesLimit = int(rng, 0, 20);
    params.push(['messages_limit', String(req.messagesLimit)]);
  }
  if (rng() < 0.1) params.push(['unknown_param', 'x']);
  // Any order: parameters are not positional.
  for (let i = params.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [params[i], params[j]] = [params[j], params[i]];
  }
  // ... except that `keyword` occurrences keep their relative order (CONTRACT 2.1).
  let k = 0;
  for (const p of params) if (p[0] === 'keyword') p[1] = keyword[k++];
  return { query: params.map(([k, val]) => `${k}=${enc(rng, val)}`).join('&'), request: req };
}

/** The reference's whole body for `req` over `data`. */
export function expected(data: { contacts: Contact[]; messages: MessageLine[] }, req: SearchRequest): SearchResponse {
  return referenceSearch(data.contacts, data.messages, req);
}

/** Asserts a 200 body equals the reference: deep equality and the same key order. */
export function assertBody(text: string, want: SearchResponse, what: string): void {
  const got = JSON.parse(text) as unknown;
  assert.deepStrictEqual(got, want, what);
  assert.equal(JSON.stringify(got), JSON.stringify(want), `${what}: key order`);
}

/** GET the search endpoint with a key. */
export async function search(base: string, key: string, query: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${SEARCH}?${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, text: await res.text() };
}

/** Polls `fn` until it returns true or `ms` pass. */
export async function waitFor(what: string, ms: number, fn: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
