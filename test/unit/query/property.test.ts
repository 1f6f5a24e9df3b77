/**
 * Property tests: the product (buildIndex + searchBody's bytes, resolveTerms) against the brute-force
 * reference of test/reference/brute-force.ts, on adversarial random organizations and requests.
 * Seed: PROPERTY_SEED (else Date.now()); scale with PROPERTY_RUNS (search cases, default 2000).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildIndex } from '../../../src/index/build.js';
import { SUMMARY_SECTIONS } from '../../../src/index/entry-summaries.js';
import type { TopListOptions } from '../../../src/index/top-lists.js';
import { CHANNELS, type Channel, type Contact, type MessageLine } from '../../../src/model/records.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { searchBody } from '../../../src/query/execute.js';
import type { SearchRequest, SearchResponse } from '../../../src/request/search-request.js';
import { exportColumns, flattenIndex, lazyIndex } from '../../../src/store/flat-index.js';
import {
  encodeSnapshot,
  parseManifest,
  SnapshotDecoder,
  type PreparedSnapshot,
} from '../../../src/store/snapshot-format.js';
import { resolveTerms } from '../../../src/request/terms.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { formatRfc3339, generateDataset } from '../../../scripts/gen-lib.js';
import { toGlobalConversations } from '../../helpers/global-conversations.js';
import { toTwoColumns } from '../../helpers/two-columns.js';
import { toWholeTopEntries } from '../../helpers/whole-top-entries.js';
import { toFloatSentTimes } from '../../helpers/float-sent-times.js';
import { toWordSentTimes } from '../../helpers/word-sent-times.js';
import { referenceSearch, referenceTerms, referenceTokens } from '../../reference/brute-force.js';

const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : Date.now() % 2 ** 31;
const SEARCH_RUNS = process.env.PROPERTY_RUNS !== undefined ? Number(process.env.PROPERTY_RUNS) : 4000;
const REPRODUCE = `PROPERTY_SEED=${SEED} node --import tsx --test test/unit/query/property.test.ts`;
console.log(`property seed ${SEED} (reproduce: ${REPRODUCE})`);

/** fc.assert with the shared seed; a failure message ends with the one-line reproduce command. */
function check(prop: fc.IPropertyWithHooks<any> | fc.IProperty<any>, numRuns: number): void {
  try {
    // whole runs: a share of PROPERTY_RUNS (e.g. 1500 / 8) may be fractional, and fast-check never
    // reaches a fractional count (the test ran forever)
    fc.assert(prop, { seed: SEED, numRuns: Math.max(1, Math.floor(numRuns)) });
  } catch (e) {
    (e as Error).message += `\nreproduce: ${REPRODUCE}`;
    throw e;
  }
}

const ORG = '0a0a0a0a-0000-4000-8000-00000000000a';
const OTHER = '0b0b0b0b-0000-4000-8000-00000000000b';

// ---- adversarial text: surface forms grouped so different spellings normalize to one token ----
const FORMS: string[][] = [
  ['pedido', 'PEDIDO', 'Pedido', 'ｐｅｄｉｄｏ', 'pédido'],
  ['pedidos'],
  ['despedido'],
  ['agua', 'ÁGUA', 'água', 'a\u0301gua'],
  ['fim', 'ﬁm', 'FIM'],
  ['segunda', 'Segunda'],
  ['via', 'VIA', 'vía'],
  ['2a', '2ª'],
  ['a', 'A', 'á'],
  ['b', 'B'],
  ['123', '１２３'],
  ['ΟΔΟΣ', 'οδος', 'οδοσ', 'Οδός'],
  ['ΣΑΣ', 'σας'],
  ['İSTANBUL', 'istanbul', 'ıstanbul', 'İ'],
  ['abc123def'],
  ['cafe', 'café', 'CAFE\u0301'],
  ['Ǆ', 'dž'],
  ['ß', 'ẞ', 'ss'],
  ['ﬀ', 'ff'],
  ['١٢'],
  ['½'],
  ['Ⅻ', 'xii'],
  ['x²'],
  ['😀'],
];
const SEPARATORS = [
  ' ',
  ' ',
  ' ',
  '  ',
  ', ',
  '-',
  '!! ',
  '😀',
  '👍🏽',
  '\n',
  '\r\n',
  '#',
  '，',
  '\u00a0',
  '',
  '_',
  '.',
  '\u200b',
  '\u0301',
  '\t',
  "'",
  '@',
  // what JSON escapes, and what it does not: the body bytes must equal JSON.stringify's
  '"',
  '\ud800', // a lone surrogate: echoed as JSON.stringify escapes it
  '\udfff',
  '\\',
  '\\"',
  '\u0000',
  '\u001f',
  '\b\f',
  '\u007f',
  '\u2028',
  '\u2029',
  '</',
  '\ud83d\ude00"',
];

const wordArb = fc.constantFrom(...FORMS).chain((forms) => fc.constantFrom(...forms));
const contentArb = fc
  .array(fc.tuple(wordArb, fc.constantFrom(...SEPARATORS)), { maxLength: 7, size: 'medium' })
  .map((pairs) => pairs.map(([w, s]) => w + s).join(''));

// Ids whose string order differs from numeric order, case order and locale order.
const CONTACT_IDS = [
  'c9',
  'c10',
  'c100',
  'C2',
  'c1',
  'é1',
  'z1',
  'Z0',
  'c-1',
  'c_1',
  'c"1',
  'c\\1',
  'ffffffff-0000-4000-8000-000000000001',
  '00000000-0000-4000-8000-000000000010',
];
const OTHER_CONTACT_IDS = ['o1', 'o2', 'o3'];
// 'uuid' and 'UUID': an id in UUID form, lower or upper case (the index packs them:
// src/index/packed-uuid.ts); 'Uuid': one of mixed case, and 'uuid-': one a digit short (kept as text)
const MSG_PREFIXES = ['m', 'm', 'm', 'M', 'é', 'm0', 'm"', 'm\\', 'm\u2028', 'm\n', 'uuid', 'UUID', 'Uuid', 'uuid-'];
// conversation n of a contact is `${tag}${CONVERSATION_PREFIXES[n]}cv${n}`: some need escaping;
// n = 4 and 5 are UUIDs instead (lower and upper case)
const CONVERSATION_PREFIXES = ['', 'q"', 'b\\', '\u2028\u0001'];
/** A UUID whose last 12 digits come from n (letters among them), in lower case. */
const uuidOf = (head: string, n: number): string =>
  `${head}-0000-4000-8000-${((n * 2654435761) >>> 0).toString(16).padStart(12, 'c')}`;
function messageIdOf(prefix: string, n: number): string {
  if (prefix === 'uuid') return uuidOf('abcdef01', n);
  if (prefix === 'UUID') return uuidOf('abcdef01', n).toUpperCase();
  if (prefix === 'Uuid') return uuidOf('Abcdef01', n);
  if (prefix === 'uuid-') return uuidOf('abcdef01', n).slice(1);
  return `${prefix}${n}`;
}
function conversationIdOf(tag: string, n: number): string {
  if (n < CONVERSATION_PREFIXES.length) return `${tag}${CONVERSATION_PREFIXES[n]}cv${n}`;
  const id = uuidOf(tag === '' ? 'c0ffee00' : 'c0ffee0f', n);
  return n === 5 ? id.toUpperCase() : id;
}

const T0 = Date.UTC(2024, 1, 28, 22, 0, 0);
const STEP = 37 * 60 * 1000;
const SLOTS = 12;
const OFFSETS = [0, -180, 330, 60, -600];
const instantOf = (slot: number, ms: number): number => T0 + slot * STEP + ms;
// a rare message 150 years before or after the others: seconds that need the high column (sent-times.ts)
const ERA = Date.UTC(2174, 1, 28) - Date.UTC(2024, 1, 28);

const contactArb = (id: string, org: string): fc.Arbitrary<Contact> =>
  fc.record({
    id: fc.constant(id),
    organization_id: fc.constant(org),
    name: fc.constantFrom(null, '', 'José', 'ANA', 'Jo"sé \\ \n\u2028😀', 'lone \udc00 half'),
    phone: fc.constantFrom(null, '+5511999990000'),
    email: fc.constantFrom(null, 'a@b.co'),
    avatar_url: fc.constantFrom(null, 'https://x/y.png'),
    source: fc.constantFrom(null, 'whatsapp', 'import', 'tab\there'),
  });

const messageSpecArb = fc.record({
  contact: fc.nat(),
  conversation: fc.integer({ min: 0, max: 5 }),
  channel: fc.constantFrom(...CHANNELS),
  direction: fc.constantFrom('inbound' as const, 'outbound' as const),
  content: contentArb,
  slot: fc.integer({ min: 0, max: SLOTS - 1 }),
  ms: fc.constantFrom(0, 0, 0, 1, 999),
  era: fc.integer({ min: 0, max: 39 }).map((v) => (v === 0 ? -1 : v === 1 ? 1 : 0)),
  offset: fc.constantFrom(...OFFSETS),
  millis: fc.boolean(),
  idNum: fc.integer({ min: 0, max: 120 }),
  idPrefix: fc.constantFrom(...MSG_PREFIXES),
});
type MessageSpec = typeof messageSpecArb extends fc.Arbitrary<infer T> ? T : never;

function materialize(org: string, contacts: Contact[], specs: MessageSpec[], tag: string): MessageLine[] {
  const used = new Set<string>();
  return specs.map((s, i) => {
    let id = messageIdOf(s.idPrefix, s.idNum);
    if (used.has(id)) id = `${id}_${i}`;
    used.add(id);
    return {
      id,
      organization_id: org,
      contact_id: contacts[s.contact % contacts.length].id,
      conversation_id: conversationIdOf(tag, s.conversation),
      channel: s.channel,
      direction: s.direction,
      content: s.content,
      sent_at: formatRfc3339(instantOf(s.slot, s.ms) + s.era * ERA, s.offset, s.millis || s.ms !== 0),
    };
  });
}

/** Organizations of up to `maxContacts` contacts and `maxMessages` messages (and another one's lines mixed in). */
const orgArbOf = (maxContacts: number, maxMessages: number, specArb = messageSpecArb, minMessages = 0) =>
  fc
    .record({
      ids: fc.uniqueArray(fc.constantFrom(...CONTACT_IDS), { minLength: 1, maxLength: maxContacts }),
      otherIds: fc.uniqueArray(fc.constantFrom(...OTHER_CONTACT_IDS), { minLength: 1, maxLength: 3 }),
      specs: fc.array(specArb, { minLength: minMessages, maxLength: maxMessages, size: 'medium' }),
      otherSpecs: fc.array(messageSpecArb, { maxLength: 8 }),
      interleave: fc.nat(),
    })
    .chain((o) =>
      fc
        .tuple(
          fc.tuple(...o.ids.map((id) => contactArb(id, ORG))),
          fc.tuple(...o.otherIds.map((id) => contactArb(id, OTHER))),
        )
        .map(([contacts, others]) => {
          const messages = materialize(ORG, contacts, o.specs, '');
          const otherMessages = materialize(OTHER, others, o.otherSpecs, 'x');
          // Mix the other organization's lines in; the reference must filter them itself.
          const all = [...messages];
          otherMessages.forEach((m, i) => {
            all.splice((o.interleave + i * 7) % (all.length + 1), 0, m);
          });
          return { contacts, others, messages, allContacts: [...others, ...contacts], allMessages: all };
        }),
    );
const orgArb = orgArbOf(6, 40);
/**
 * Few contacts with many messages each: a contact holds a token in several messages of several
 * channels and directions, the entries the filtered walks settle without a scan or must scan.
 */
const denseOrgArb = orgArbOf(3, 80);
/**
 * One or two contacts with dozens of messages over eight words: a contact holds each word in many
 * messages, so a several-term walk (walkUnion) reads long lists whose messages repeat across terms.
 */
const FEW_WORDS = ['pedido', 'agua', 'fim', 'via', 'cafe', 'pix', 'sim', 'boleto'];
const fewWordsOrgArb = orgArbOf(
  2,
  150,
  messageSpecArb.chain((m) =>
    fc
      .array(fc.constantFrom(...FEW_WORDS), { minLength: 1, maxLength: 6 })
      .map((words) => ({ ...m, content: words.join(' ') })),
  ),
  40,
);
type Org = typeof orgArb extends fc.Arbitrary<infer T> ? T : never;

// ---- requests: terms mostly from the organization's own tokens and adjacent pairs ----
const ABSENT = ['nada', 'zz top', 'pedido pedido', 'fim agua', 'xyz', 'despedidos'];
const termRecipeArb = fc.record({
  kind: fc.constantFrom('token', 'token', 'token', 'pair', 'pair', 'triple', 'raw', 'raw', 'absent', 'form'),
  a: fc.nat(),
  b: fc.nat(),
});
// null (no bound) most of the time; else an instant on, just before or just after a message slot
const boundArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.record({ slot: fc.integer({ min: -1, max: SLOTS }), delta: fc.constantFrom(-1, 0, 0, 1, 999, 1000) }),
  },
);
const requestSpecArb = fc.record({
  recipes: fc.array(termRecipeArb, { minLength: 1, maxLength: 4 }),
  match: fc.constantFrom('any' as const, 'any' as const, 'all' as const),
  direction: fc.constantFrom('inbound' as const, 'outbound' as const, 'all' as const, 'all' as const),
  channel: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom(...CHANNELS) },
  ),
  from: boundArb,
  to: boundArb,
  limit: fc.integer({ min: 1, max: 5 }),
  offset: fc.oneof(
    { weight: 6, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 8 }) },
    { weight: 1, arbitrary: fc.constant(2 ** 53 - 1) },
  ),
  messagesLimit: fc.integer({ min: 0, max: 4 }),
});
type RequestSpec = typeof requestSpecArb extends fc.Arbitrary<infer T> ? T : never;
/** Three to ten of the few words and phrases, any or all, sometimes filtered: the many-term walks. */
const manyTermsSpecArb = fc.record({
  spec: requestSpecArb,
  // up to MAX_TERMS of them, phrases of two among them (the union walk's phrase path)
  words: fc.uniqueArray(fc.constantFrom(...FEW_WORDS, 'pedido agua', 'fim via', 'agua pedido', 'pix sim'), {
    minLength: 3,
    maxLength: 10,
  }),
});

/** One or two plain tokens under a channel filter (mostly) and date bounds: the filtered walks. */
const filteredSpecArb = fc
  .record({
    spec: requestSpecArb,
    tokens: fc.integer({ min: 1, max: 2 }),
    direction: fc.constantFrom('inbound' as const, 'inbound' as const, 'outbound' as const, 'all' as const),
    channel: fc.option(fc.constantFrom(...CHANNELS), { freq: 4, nil: null }),
    from: boundArb,
    to: boundArb,
  })
  .map(({ spec, tokens, direction, channel, from, to }) => ({
    ...spec,
    recipes: spec.recipes.slice(0, tokens).map((r) => ({ ...r, kind: 'token' as const })),
    direction,
    channel,
    from,
    to,
  }));

function rawTerm(org: Pick<Org, 'messages'>, r: { kind: string; a: number; b: number }): string {
  const seqs = org.messages.map((m) => referenceTokens(m.content)).filter((t) => t.length > 0);
  if (r.kind === 'absent' || seqs.length === 0) return ABSENT[r.a % ABSENT.length];
  const seq = seqs[r.a % seqs.length];
  const i = r.b % seq.length;
  switch (r.kind) {
    case 'token':
      return seq[i];
    case 'pair':
      return seq.slice(i, i + 2).join(' ');
    case 'triple':
      return seq.slice(i, i + 3).join(' ');
    case 'form': {
      const f = FORMS[r.b % FORMS.length];
      return f[r.a % f.length];
    }
    default: {
      // a raw piece of the content, punctuation and all ("segunda-via", "ﬁm!!")
      const content = org.messages.find((m) => referenceTokens(m.content).length > 0)!.content;
      const pieces = content.split(' ').filter((p) => p !== '');
      return pieces[r.b % pieces.length] ?? content;
    }
  }
}

function instantSpec(s: { slot: number; delta: number } | null): number | null {
  return s === null ? null : instantOf(s.slot, s.delta);
}

function makeRequest(org: Pick<Org, 'messages'>, spec: RequestSpec, orgId = ORG): SearchRequest {
  let terms = referenceTerms(
    null,
    null,
    spec.recipes.map((r) => rawTerm(org, r)),
  );
  if (terms.length === 0) terms = ['nada'];
  let from = instantSpec(spec.from),
    to = instantSpec(spec.to);
  if (from !== null && to !== null && from > to) [from, to] = [to, from];
  return {
    organizationId: orgId,
    terms,
    match: spec.match,
    direction: spec.direction,
    channel: spec.channel as Channel | null,
    from,
    to,
    limit: spec.limit,
    offset: spec.offset,
    messagesLimit: spec.messagesLimit,
  };
}

function indexOf(org: Pick<Org, 'contacts' | 'messages'>, orgId = ORG) {
  const b = new OrgDataBuilder(orgId);
  for (const c of org.contacts) b.addContact(c);
  for (const m of org.messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  // every other index indexes the pairs of all adjacent tokens, so the pair postings that large
  // organizations use for phrases of common words are compared with the reference too
  return buildIndex(b.build(), {
    pairMinFrequency: pairVariant++ % 2 === 0 ? undefined : 1,
    topLists: topLists(),
    summaryMin: summaryMin(),
  });
}
let pairVariant = 0;

/**
 * Top lists (precomputed first pages of frequent tokens) cycle through: the default (no token of
 * these small organizations is frequent enough: the scan answers), every token with lists of 2
 * entries (short: pages past them fall back to the scan), and every token with whole lists.
 */
function topLists(): TopListOptions | undefined {
  const v = topVariant++ % 3;
  return v === 0 ? undefined : { minEntries: 1, length: v === 1 ? 2 : 1_000_000 };
}
let topVariant = 0;

/**
 * Long-entry summaries (entry-summaries.ts) cycle through: every entry summarized, entries of 2
 * or more, of 3 or more (so that summarized and walked contacts share a page), and the default
 * (which these small organizations seldom reach).
 */
function summaryMin(): number | undefined {
  return [1, 2, 3, undefined][summaryVariant++ % 4];
}
let summaryVariant = 0;

/**
 * The whole 200 body, byte for byte: the product's bytes against the UTF-8 of JSON.stringify of
 * the reference answer (so key order, escaping and number and timestamp forms all count). On a
 * difference, the decoded objects are compared first for a readable diff.
 */
function assertBody(body: Uint8Array, expected: SearchResponse): void {
  const want = Buffer.from(JSON.stringify(expected), 'utf8');
  if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).equals(want)) return;
  const text = Buffer.from(body).toString('utf8');
  assert.deepStrictEqual(JSON.parse(text), expected);
  assert.equal(text, want.toString('utf8'));
  assert.fail('body bytes differ from JSON.stringify of the reference (same text after decoding: invalid UTF-8?)');
}

/**
 * The index a server serves after a snapshot round trip: encoded into chunks and a manifest,
 * decoded and verified, wrapped as a server does (lazyIndex, so these small organizations' per-key
 * columns are 16-bit). Format 2 carries the built index (here with either pair threshold); format
 * 1 carries the records and is rebuilt on load.
 */
function loadedIndexOf(org: Pick<Org, 'contacts' | 'messages'>, format: 1 | 2, orgId = ORG) {
  const b = new OrgDataBuilder(orgId);
  for (const c of org.contacts) b.addContact(c);
  for (const m of org.messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  const data = b.build();
  let prepared: PreparedSnapshot;
  if (format === 1) prepared = { format: 1, data };
  else {
    let order: Uint32Array | undefined;
    const built = buildIndex(data, {
      pairMinFrequency: pairVariant++ % 2 === 0 ? undefined : 1,
      topLists: topLists(),
      summaryMin: summaryMin(),
      onOrder: (o) => {
        order = o;
      },
    });
    const flat = flattenIndex(built, exportColumns(data, order!));
    // the layout before long-entry summaries: the loader derives them
    if (previousLayoutVariant++ % 3 === 2) {
      for (const name of SUMMARY_SECTIONS) delete flat.sections[name];
    }
    // the layout before message rows (ids and contents in two columns): the loader derives the rows
    if (twoColumnVariant++ % 2 === 1) toTwoColumns(flat);
    // the layout before conversations numbered by contact: the loader renumbers them
    if (conversationVariant++ % 4 >= 2) toGlobalConversations(flat);
    // the layout before top-list offsets: the loader converts the whole entry positions
    if (wholeTopVariant++ % 2 === 1) toWholeTopEntries(flat);
    // the layouts before sent-time blocks (three words a message) and before seconds and
    // milliseconds apart (epoch ms): the loader encodes them as blocks
    const sentVariant = floatSentVariant++ % 3;
    if (sentVariant === 1) toFloatSentTimes(flat);
    else if (sentVariant === 2) toWordSentTimes(flat);
    prepared = { format: 2, flat };
  }
  const enc = encodeSnapshot(prepared, 3);
  const chunks = [...enc.chunks];
  // a server's decoder skips the export sections; a tool's keeps them: both must serve the same
  const purpose = purposeVariant++ % 2 === 0 ? 'serve' : 'export';
  const decoder = new SnapshotDecoder(
    parseManifest(enc.manifest(), { organizationId: orgId, version: 3 }),
    {},
    purpose,
  );
  // in reverse: chunks may arrive in any order
  for (let i = chunks.length - 1; i >= 0; i--) decoder.add(i, chunks[i]);
  const flat = decoder.finishFlat();
  for (const a of Object.values(flat.sections))
    assert.ok(a.buffer instanceof SharedArrayBuffer, 'every section is shared memory');
  if (purpose === 'serve') assert.throws(() => decoder.finishData(), /a decoder made to serve/);
  // as a server loads it (lazyIndex): these small organizations' per-key columns in 16 bits
  return lazyIndex(flat).index;
}
let purposeVariant = 0;

/** Records with every string as a UTF-8 round trip leaves it (a lone surrogate becomes U+FFFD). */
function utf8RoundTrip<T>(records: T): T {
  return JSON.parse(JSON.stringify(records), (_k, v) => (typeof v === 'string' ? v.toWellFormed() : v)) as T;
}
let previousLayoutVariant = 0;
let twoColumnVariant = 0;
let conversationVariant = 0;
let wholeTopVariant = 0;
let floatSentVariant = 0;

describe('product vs brute-force reference', () => {
  it(`the body bytes equal JSON.stringify of referenceSearch (${SEARCH_RUNS} organizations x 1 request)`, () => {
    check(
      fc.property(orgArb, requestSpecArb, (org, spec) => {
        const req = makeRequest(org, spec);
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      SEARCH_RUNS,
    );
  });

  it(`indexes loaded from snapshots equal referenceSearch (format 2 as stored, format 1 rebuilt; ${SEARCH_RUNS / 2} cases)`, () => {
    let k = 0;
    check(
      fc.property(orgArb, requestSpecArb, (org, spec) => {
        const req = makeRequest(org, spec);
        const format = k++ % 3 === 2 ? 1 : 2;
        // format 1 (the layout before this one) keeps raw strings as UTF-8, which holds no lone
        // surrogate: the imports that wrote such snapshots had put U+FFFD in their place
        const strings = format === 1 ? utf8RoundTrip : <T>(x: T) => x;
        const expected = referenceSearch(strings(org.allContacts), strings(org.allMessages), req);
        const stored = { contacts: strings(org.contacts), messages: strings(org.messages) };
        assertBody(searchBody(loadedIndexOf(stored, format), req), expected);
      }),
      SEARCH_RUNS / 2,
    );
  });

  it(`filtered walks: plain tokens under channel and date filters, dense contacts (${SEARCH_RUNS / 2} cases)`, () => {
    check(
      fc.property(denseOrgArb, filteredSpecArb, (org, spec) => {
        const req = makeRequest(org, spec);
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      SEARCH_RUNS / 2,
    );
  });

  it(`many-term walks: 3-10 terms (some phrases) of a small vocabulary on contacts with many messages (${SEARCH_RUNS / 8} cases)`, () => {
    check(
      fc.property(fewWordsOrgArb, manyTermsSpecArb, (org, { spec, words }) => {
        const req = { ...makeRequest(org, spec), terms: words, limit: Math.max(spec.limit, 2) };
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      SEARCH_RUNS / 8,
    );
  });

  it(`nested phrases: terms that are runs of one another (${SEARCH_RUNS / 8} cases; \`any\` skips the terms that contain another)`, () => {
    // a run of 2-6 of three words (repeats likely: "pix pix pix"), its sub-runs as terms, some
    // spelled with other separators (the same tokens under another string)
    const nestedArb = fc.record({
      run: fc.array(fc.constantFrom('pedido', 'pix', 'sim'), { minLength: 2, maxLength: 6 }),
      cuts: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(' ', '-', ', ')), { minLength: 2, maxLength: 10 }),
    });
    check(
      fc.property(fewWordsOrgArb, requestSpecArb, nestedArb, (org, spec, { run, cuts }) => {
        const raw = cuts.map(([a, b, sep]) => {
          const from = a % run.length;
          return run.slice(from, from + 1 + (b % (run.length - from))).join(sep);
        });
        const terms = referenceTerms(null, null, raw);
        const req = { ...makeRequest(org, spec), terms, limit: Math.max(spec.limit, 2) };
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      SEARCH_RUNS / 8,
    );
  });

  it('phrases whose rarest key is in 1,024 messages or more: the second-key test (holdsPhrase), 40 organizations of ~2,400 messages', () => {
    // three words, four to eight a message: every pair is indexed and in about half the messages,
    // so a phrase's driving key is frequent enough to take a second key (term-view.ts)
    const THREE = ['pix', 'sim', 'o'];
    const bigOrgArb = orgArbOf(
      14,
      2600,
      messageSpecArb.chain((m) =>
        fc
          .array(fc.constantFrom(...THREE), { minLength: 4, maxLength: 8 })
          .map((words) => ({ ...m, content: words.join(' ') })),
      ),
      2200,
    );
    const phrasesArb = fc.array(fc.array(fc.constantFrom(...THREE), { minLength: 2, maxLength: 5 }), {
      minLength: 1,
      maxLength: 4,
    });
    check(
      fc.property(bigOrgArb, requestSpecArb, phrasesArb, (org, spec, phrases) => {
        const terms = referenceTerms(
          null,
          null,
          phrases.map((p) => p.join(' ')),
        );
        const req = { ...makeRequest(org, spec), terms, limit: Math.max(spec.limit, 3) };
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      40,
    );
  });

  it('one index answers many requests the same as fresh indexes (no state kept between queries)', () => {
    check(
      fc.property(orgArb, fc.array(requestSpecArb, { minLength: 2, maxLength: 6 }), (org, specs) => {
        const index = indexOf(org);
        for (const spec of specs) {
          const req = makeRequest(org, spec);
          assertBody(searchBody(index, req), referenceSearch(org.allContacts, org.allMessages, req));
        }
      }),
      Math.max(50, Math.floor(SEARCH_RUNS / 8)),
    );
  });

  it('generated realistic data (scripts/gen-lib.ts, 2 organizations, > 1024 messages each)', () => {
    const { contacts, messages } = generateDataset({ messages: 6000, contacts: 400, organizations: 2, seed: SEED });
    const orgId = contacts[0].organization_id;
    const org = {
      contacts: contacts.filter((c) => c.organization_id === orgId),
      messages: messages.filter((m) => m.organization_id === orgId),
    };
    const index = loadedIndexOf(org, 2, orgId);
    // the generator's own calendar: bounds land on real message instants, ± 1 ms
    const instants = org.messages.map((m) => parseRfc3339(m.sent_at)!);
    const bound = fc.oneof(
      { weight: 2, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.nat(), fc.constantFrom(-1, 0, 1)).map(([i, d]) => instants[i % instants.length] + d),
      },
    );
    check(
      fc.property(requestSpecArb, bound, bound, (spec, a, b) => {
        const req = makeRequest(org, { ...spec, from: null, to: null }, orgId);
        [req.from, req.to] = a !== null && b !== null && a > b ? [b, a] : [a, b];
        assertBody(searchBody(index, req), referenceSearch(contacts, messages, req));
      }),
      60,
    );
  });

  it('the query echo: every match, direction and channel, instants across and beyond years 0000-9999', () => {
    // an RFC 3339 offset carries a bound an hour past either end of the 4-digit years
    const edges = [-62167219200000 - 3600000, -62167219200000, -1, 0, 253402300799999, 253402300799999 + 3600000];
    const instant = fc.oneof(
      fc.constant(null),
      fc.constantFrom(...edges),
      fc.integer({ min: -62167219200000 - 86400000, max: 253402300799999 + 86400000 }),
    );
    check(
      fc.property(orgArb, requestSpecArb, instant, instant, (org, spec, a, b) => {
        const req = makeRequest(org, spec);
        [req.from, req.to] = a !== null && b !== null && a > b ? [b, a] : [a, b];
        assertBody(searchBody(null, req), referenceSearch([], [], req));
        assertBody(searchBody(indexOf(org), req), referenceSearch(org.allContacts, org.allMessages, req));
      }),
      300,
    );
  });

  it('an organization without an index answers data [] and count 0', () => {
    check(
      fc.property(orgArb, requestSpecArb, (org, spec) => {
        const req = makeRequest(org, spec);
        assertBody(searchBody(null, req), referenceSearch([], [], req));
      }),
      200,
    );
  });
});

// ---- resolveTerms vs referenceTerms ----
const PIECES = [
  ',',
  ';',
  '\r\n',
  '\n',
  '\r',
  ' ',
  '  ',
  '\t',
  '\u00a0',
  '\u3000',
  '\u2028',
  '\ufeff',
  '，',
  '；',
  'ﬁ',
  'İ',
  'Σ',
  'ς',
  'σ',
  'ΟΔΟΣ',
  'a',
  'B',
  'é',
  'e\u0301',
  '\u0301',
  '😀',
  '👍🏽',
  '𝒜',
  '𝟙',
  '!!',
  '#',
  '-',
  '1',
  'ab',
  'pedido',
  'Segunda Via',
  '\u200b',
  '½',
  'Ⅻ',
  'ß',
  '\ud800',
];
const pieceString = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...PIECES), minLength: min, maxLength: max });
const cpLength = (s: string): number => Array.from(s).length;
const rawArb = fc.oneof(
  { weight: 4, arbitrary: pieceString(0, 12) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  // longer than 200 code points, astral characters included
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.integer({ min: 150, max: 230 }),
        fc.constantFrom('a', 'ﬁ', '𝒜', 'é', 'x ', '! a', '😀b', ' \t', 'ΟΔΟΣ '),
        pieceString(0, 20),
      )
      .map(([n, p, tail]) => p.repeat(n) + tail),
  },
);
const rawTermsArb = fc.record({
  q: fc.option(
    rawArb.filter((s) => cpLength(s) <= 200),
    { nil: null },
  ),
  keywords: fc.option(
    fc
      .array(rawArb, { maxLength: 8 })
      .map((xs) => xs.join(','))
      .filter((s) => cpLength(s) <= 1000),
    { nil: null },
  ),
  keyword: fc.array(rawArb, { maxLength: 5 }),
});

describe('resolveTerms vs referenceTerms', () => {
  it('random raw strings with separators, white space, unicode and long terms', () => {
    check(
      fc.property(rawTermsArb, ({ q, keywords, keyword }) => {
        assert.deepStrictEqual(resolveTerms(q, keywords, keyword), referenceTerms(q, keywords, keyword));
      }),
      1500,
    );
  });

  // CONTRACT 2 lists the discard (3) before the cut (4); we apply the discard to the final term as
  // well, so a keyword whose first 200 code points hold no letter or digit is dropped rather than
  // kept as a token-less term that would match every message.
  it('a cut that leaves no token discards the term', () => {
    for (const raw of ['!'.repeat(200) + ' ab', '- '.repeat(100) + 'ok']) {
      assert.deepStrictEqual(resolveTerms(null, null, [raw]), []);
      assert.deepStrictEqual(referenceTerms(null, null, [raw]), []);
    }
    assert.deepStrictEqual(
      resolveTerms(null, null, ['😀'.repeat(199) + ' pedido']),
      referenceTerms(null, null, ['😀'.repeat(199) + ' pedido']),
    );
  });

  it('many short terms: dedupe before the 10-term cut', () => {
    check(
      fc.property(
        fc.array(
          fc.constantFrom('aa', 'AA', 'áa', 'bb', 'cc', 'dd', 'ee', 'ff', 'gg', 'hh', 'ii', 'jj', 'kk', 'x', '!!'),
          { maxLength: 25 },
        ),
        (xs) => {
          assert.deepStrictEqual(resolveTerms(null, xs.join(';'), xs), referenceTerms(null, xs.join(';'), xs));
        },
      ),
      300,
    );
  });
});
