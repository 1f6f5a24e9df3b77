/**
 * Import fuzzing (issue 6): a small generated pair of NDJSON files, one line mutated at a random
 * position (a dropped field, a wrong type, a truncated line, invalid UTF-8 bytes, a bad UUID,
 * channel, direction or sent_at, a duplicate id, a message of an unknown contact or of another
 * organization, garbage after the JSON, an array or a number instead of an object), with random
 * blank lines, CRLF line ends and a BOM around it. Every mutated import must be refused with an
 * error naming the file's base name, the exact line and the field at fault, and must leave the
 * store as it was (latest() identical, the loaded snapshots equal). In-process through
 * readImport/publishImport for speed, plus a few runs of the real CLI (exit code 1).
 *
 * IMPORT_FUZZ_SEED / IMPORT_FUZZ_RUNS override the defaults; the seed is printed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { ImportError } from '../../src/import/import-error.js';
import { unprepared } from '../helpers/prepared.js';
import { publishImport, readImport } from '../../src/import/importer.js';
import type { OrgData } from '../../src/model/records.js';
import { EmbeddedStore } from '../../src/store/embedded-store.js';
import type { SnapshotRef } from '../../src/store/snapshot-store.js';
import { importCli, tempDir } from '../helpers/e2e.js';
import { baseEnv } from '../helpers/server.js';
import { generate, uuid } from '../fixtures/gen-data.js';

const SEED = process.env.IMPORT_FUZZ_SEED !== undefined ? Number(process.env.IMPORT_FUZZ_SEED) : Date.now() % 2 ** 31;
const RUNS = process.env.IMPORT_FUZZ_RUNS !== undefined ? Number(process.env.IMPORT_FUZZ_RUNS) : 400;
const REPRODUCE = `IMPORT_FUZZ_SEED=${SEED} node --import tsx --test test/e2e/import-fuzz.test.ts`;
console.log(`import fuzz seed ${SEED} (reproduce: ${REPRODUCE})`);

type Row = Record<string, unknown>;

const A = generate(1, 4, 14, 1),
  B = generate(2, 3, 9, 1);
const CONTACTS: Row[] = [...A.contacts, ...B.contacts] as unknown as Row[];
// Interleaved, so a line's organization is not its position's.
const MESSAGES: Row[] = A.messages.flatMap((m, i) =>
  i < B.messages.length ? [m, B.messages[i]] : [m],
) as unknown as Row[];
const OTHER_ORG: Record<string, string> = { [uuid(1, 0)]: uuid(2, 0), [uuid(2, 0)]: uuid(1, 0) };

const CONTACT_FIELDS = ['id', 'organization_id', 'name', 'phone', 'email', 'avatar_url', 'source'];
const NULLABLE = new Set(['name', 'phone', 'email', 'avatar_url', 'source']);
const MESSAGE_FIELDS = [
  'id',
  'organization_id',
  'contact_id',
  'conversation_id',
  'channel',
  'direction',
  'content',
  'sent_at',
];

const KINDS = [
  'drop',
  'wrongType',
  'truncate',
  'badUtf8',
  'badUuid',
  'badChannel',
  'badDirection',
  'badSentAt',
  'dupId',
  'unknownContact',
  'orgMismatch',
  'garbage',
  'notObject',
] as const;
type Kind = (typeof KINDS)[number];
const MESSAGE_ONLY = new Set<Kind>(['badChannel', 'badDirection', 'badSentAt', 'unknownContact', 'orgMismatch']);

const WRONG_VALUES: unknown[] = [42, true, {}, [], null, -1.5, ['x']];
const BAD_UUIDS = [
  'nope',
  '',
  '000000010000400080000000000000001',
  '00000001-0000-4000-8000-00000000000g',
  '00000001-0000-4000-8000-0000000000011',
  '00000001-0000-4000-8000-00000000001',
  ' 00000001-0000-4000-8000-000000000001',
  '{00000001-0000-4000-8000-000000000001}',
];
const BAD_CHANNELS = ['sms', 'Email', 'WHATSAPP', '', 'whatsapp ', 'whatsapp-cloud-api'];
const BAD_DIRECTIONS = ['in', 'Inbound', 'all', '', 'outbound '];
const BAD_SENT_AT = [
  '2024-02-30T10:00:00Z',
  '2023-02-29T10:00:00+00:00',
  '2024-01-01T10:00:00',
  '2024-01-01 10:00:00Z',
  '2024-01-01T24:00:00Z',
  '2024-01-01T10:60:00Z',
  '2024-01-01T10:00:60Z',
  '2024-01-01',
  '2024-01-01T10:00Z',
  '2024-13-01T00:00:00Z',
  '2024-01-01T10:00:00+24:00',
  '2024-01-01T10:00:00.Z',
  '',
  'yesterday',
  '2024-04-31T00:00:00-03:00',
];
// Invalid UTF-8: a lone 0xFF, a stray continuation byte, cut 2/3/4-byte sequences, an overlong
// "/", an encoded surrogate, a code point above U+10FFFF.
const BAD_BYTES = [
  [0xff],
  [0x80],
  [0xc3],
  [0xe2, 0x82],
  [0xf0, 0x9f, 0x99],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xfe],
];
const GARBAGE = [' x', '}', ',', ' {}', '\u0000', ' null', '{"id":1}', ']', ' //'];
const NOT_OBJECT = ['[1,2]', '42', '"text"', 'null', 'true', '[]', '-0.5'];

interface Mutation {
  target: 'contacts' | 'messages';
  kind: Kind;
  pos: number;
  pick: number;
  pick2: number;
  crlf: boolean;
  bom: boolean;
  blanks: number[];
}

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  target: fc.constantFrom('contacts' as const, 'messages' as const),
  kind: fc.constantFrom(...KINDS),
  pos: fc.nat(),
  pick: fc.nat(),
  pick2: fc.nat(),
  crlf: fc.boolean(),
  bom: fc.boolean(),
  blanks: fc.array(fc.nat({ max: 30 }), { maxLength: 4 }),
});

interface Expected {
  file: 'contacts' | 'messages';
  /** index of the mutated record in its file */
  record: number;
  field: string | null;
}

/** Applies `m` to copies of the records; returns every line as bytes and what the error must name. */
function mutate(m: Mutation): { contacts: Buffer[]; messages: Buffer[]; expected: Expected } {
  const kind = m.kind;
  const target = MESSAGE_ONLY.has(kind) ? 'messages' : m.target;
  const rows = (target === 'contacts' ? CONTACTS : MESSAGES).map((r) => ({ ...r }));
  const fields = target === 'contacts' ? CONTACT_FIELDS : MESSAGE_FIELDS;
  let i = m.pos % rows.length;
  const r = rows[i];
  let field: string | null = null;
  let line: Buffer | null = null; // set when the line is not JSON.stringify(r)
  const pick = <T>(xs: readonly T[], n = m.pick): T => xs[n % xs.length];

  switch (kind) {
    case 'drop':
      field = pick(fields);
      delete r[field];
      break;
    case 'wrongType': {
      field = pick(fields);
      let value = pick(WRONG_VALUES, m.pick2);
      if (value === null && NULLABLE.has(field)) value = 42;
      r[field] = value;
      break;
    }
    case 'truncate': {
      const s = JSON.stringify(r);
      line = Buffer.from(s.slice(0, 1 + (m.pick2 % (s.length - 1))));
      break;
    }
    case 'badUtf8': {
      const candidates = fields.filter((f) => typeof r[f] === 'string');
      field = pick(candidates);
      const cps = [...(r[field] as string)];
      const k = m.pick2 % (cps.length + 1);
      const MARK = 'QQMARKQQ';
      r[field] = cps.slice(0, k).join('') + MARK + cps.slice(k).join('');
      const s = Buffer.from(JSON.stringify(r));
      const at = s.indexOf(MARK);
      line = Buffer.concat([
        s.subarray(0, at),
        Buffer.from(pick(BAD_BYTES, m.pick2 >> 3)),
        s.subarray(at + MARK.length),
      ]);
      break;
    }
    case 'badUuid':
      field = pick(target === 'contacts' ? ['id', 'organization_id'] : ['organization_id', 'contact_id']);
      r[field] = pick(BAD_UUIDS, m.pick2);
      break;
    case 'badChannel':
      field = 'channel';
      r.channel = pick(BAD_CHANNELS);
      break;
    case 'badDirection':
      field = 'direction';
      r.direction = pick(BAD_DIRECTIONS);
      break;
    case 'badSentAt':
      field = 'sent_at';
      r.sent_at = pick(BAD_SENT_AT);
      break;
    case 'dupId': {
      // The later of two records of one organization takes the earlier one's id.
      if (i === 0) i = 1;
      const org = rows[i].organization_id;
      let earlier = -1;
      for (let j = 0; j < i; j++) if (rows[j].organization_id === org) earlier = j;
      if (earlier < 0) {
        i = rows.findIndex((x, j) => j > 0 && x.organization_id === rows[0].organization_id);
        earlier = 0;
      }
      rows[i].id = rows[earlier].id;
      field = 'id';
      break;
    }
    case 'unknownContact':
      field = 'contact_id';
      r.contact_id = uuid(77, 1 + (m.pick % 1000));
      break;
    case 'orgMismatch':
      field = 'organization_id';
      r.organization_id = m.pick % 3 === 0 ? uuid(55, 0) : OTHER_ORG[r.organization_id as string];
      break;
    case 'garbage':
      line = Buffer.from(JSON.stringify(r) + pick(GARBAGE));
      break;
    case 'notObject':
      line = Buffer.from(m.pick % 5 === 0 ? JSON.stringify([r]) : pick(NOT_OBJECT));
      break;
  }
  const lines = rows.map((x, j) => (j === i && line !== null ? line : Buffer.from(JSON.stringify(x))));
  const clean = (target === 'contacts' ? MESSAGES : CONTACTS).map((x) => Buffer.from(JSON.stringify(x)));
  return {
    contacts: target === 'contacts' ? lines : clean,
    messages: target === 'messages' ? lines : clean,
    expected: { file: target, record: i, field },
  };
}

/** The file's bytes with blank lines, CRLF and a BOM as `m` says; the 1-based line number of every record. */
function layout(records: Buffer[], m: Mutation): { bytes: Buffer; lineOf: number[] } {
  const eol = Buffer.from(m.crlf ? '\r\n' : '\n');
  const blanksBefore = new Map<number, number>();
  for (const b of m.blanks)
    blanksBefore.set(b % (records.length + 1), (blanksBefore.get(b % (records.length + 1)) ?? 0) + 1);
  const parts: Buffer[] = [];
  const lineOf: number[] = [];
  let line = 0;
  if (m.bom) parts.push(Buffer.from([0xef, 0xbb, 0xbf]));
  for (let j = 0; j <= records.length; j++) {
    for (let k = blanksBefore.get(j) ?? 0; k > 0; k--) {
      parts.push(Buffer.from(k % 2 ? '' : '  \t'), eol);
      line++;
    }
    if (j === records.length) break;
    parts.push(records[j], eol);
    lineOf.push(++line);
  }
  return { bytes: Buffer.concat(parts), lineOf };
}

const work = tempDir('import-fuzz-');
let store: EmbeddedStore;
let refsBefore: SnapshotRef[];
let dataBefore: OrgData[];
let caseNo = 0;

interface Case {
  contactsFile: string;
  messagesFile: string;
  cleanContacts: string;
  cleanMessages: string;
  base: string;
  line: number;
  field: string | null;
  kind: Kind;
}

/** Writes the mutated files (and the same layout without the mutation) under fresh base names. */
function writeCase(m: Mutation): Case {
  const n = caseNo++;
  const dir = path.join(work.dir, `case-${n}`);
  mkdirSync(dir);
  const { contacts, messages, expected } = mutate(m);
  const c = layout(contacts, m),
    msg = layout(messages, { ...m, bom: !m.bom, crlf: m.crlf && m.pick % 2 === 0 });
  const names = { contacts: `contacts-${n}.ndjson`, messages: `export ${n}.messages.ndjson` };
  const cleanC = layout(
    CONTACTS.map((x) => Buffer.from(JSON.stringify(x))),
    m,
  );
  const cleanM = layout(
    MESSAGES.map((x) => Buffer.from(JSON.stringify(x))),
    { ...m, bom: !m.bom, crlf: m.crlf && m.pick % 2 === 0 },
  );
  const out: Case = {
    contactsFile: path.join(dir, names.contacts),
    messagesFile: path.join(dir, names.messages),
    cleanContacts: path.join(dir, `clean-${names.contacts}`),
    cleanMessages: path.join(dir, `clean-${names.messages}`),
    base: names[expected.file],
    line: (expected.file === 'contacts' ? c : msg).lineOf[expected.record],
    field: expected.field,
    kind: m.kind,
  };
  writeFileSync(out.contactsFile, c.bytes);
  writeFileSync(out.messagesFile, msg.bytes);
  writeFileSync(out.cleanContacts, cleanC.bytes);
  writeFileSync(out.cleanMessages, cleanM.bytes);
  return out;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The error detail `c` must produce: base name, line, and the field or no field. */
function expectedDetail(c: Case): RegExp {
  const head = `^${escapeRegExp(c.base)} line ${c.line}: `;
  return new RegExp(
    c.field === null ? `${head}(?!field )\\S` : `${head}field ${escapeRegExp(JSON.stringify(c.field))}: \\S`,
  );
}

async function assertStoreUnchanged(what: string): Promise<void> {
  assert.deepEqual(await store.snapshots.latest(), refsBefore, `${what}: latest() changed`);
  for (let j = 0; j < refsBefore.length; j++)
    assert.deepEqual(await store.snapshots.loadSnapshot(refsBefore[j]), dataBefore[j], `${what}: snapshot changed`);
}

before(async () => {
  store = await new EmbeddedStore(path.join(work.dir, 'data')).open();
  const c = path.join(work.dir, 'contacts.ndjson'),
    m = path.join(work.dir, 'messages.ndjson');
  writeFileSync(c, CONTACTS.map((x) => JSON.stringify(x)).join('\n') + '\n');
  writeFileSync(m, MESSAGES.map((x) => JSON.stringify(x)).join('\n') + '\n');
  await publishImport(store.snapshots, await readImport(c, m));
  refsBefore = (await store.snapshots.latest()).sort((a, b) => (a.organizationId < b.organizationId ? -1 : 1));
  assert.equal(refsBefore.length, 2);
  dataBefore = await Promise.all(refsBefore.map((r) => store.snapshots.loadSnapshot(r)));
});
after(async () => {
  await store?.close();
  work.cleanup();
});

describe(`import fuzzing (seed ${SEED})`, () => {
  test(`${RUNS} mutated imports are refused with file, line and field; the store is unchanged`, async (t) => {
    t.diagnostic(`seed ${SEED}; reproduce: ${REPRODUCE}`);
    const kinds = new Map<Kind, number>();
    await fc.assert(
      fc.asyncProperty(mutationArb, async (m) => {
        const c = writeCase(m);
        kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
        // The same layout without the mutation imports: the mutation alone is refused.
        const clean = await readImport(c.cleanContacts, c.cleanMessages);
        assert.equal(clean.messages, MESSAGES.length);
        let error: unknown = null;
        try {
          await publishImport(store.snapshots, await readImport(c.contactsFile, c.messagesFile));
        } catch (err) {
          error = err;
        }
        assert.ok(error instanceof ImportError, `${c.kind}: refused with an ImportError, got ${String(error)}`);
        assert.match(error.detail, expectedDetail(c), `${c.kind}`);
        assert.ok(!error.detail.includes(work.dir), 'the base name only, not the path');
        await assertStoreUnchanged(c.kind);
      }),
      {
        seed: SEED,
        numRuns: RUNS,
        reporter: (r) => {
          if (r.failed) throw new Error(`${fc.defaultReportMessage(r)}\nreproduce: ${REPRODUCE}`);
        },
      },
    );
    t.diagnostic(`mutations: ${JSON.stringify(Object.fromEntries(kinds))}`);
    assert.equal(kinds.size, KINDS.length, 'every kind of mutation was tried');
  });

  test('read on two threads (messages-reader.ts, forced on these small files): the same data and the same first error', async (t) => {
    // A reader thread starts for every case (through tsx here), so fewer runs than above.
    const runs = Math.max(1, Math.min(RUNS, 60));
    t.diagnostic(`${runs} cases; seed ${SEED}; reproduce: ${REPRODUCE}`);
    const twoThreads = { splitMinBytes: 1 };
    const outcome = async (contacts: string, messages: string, options = {}) => {
      try {
        const data = await readImport(contacts, messages, undefined, options);
        return {
          messages: data.messages,
          contacts: data.contacts,
          // the prepared text read back: contents and tokens checked in each path
          orgs: [...data.organizations].map(([id, b]) => [id, unprepared(b.build())]),
        };
      } catch (err) {
        if (!(err instanceof ImportError)) throw err;
        return { error: err.message };
      }
    };
    await fc.assert(
      fc.asyncProperty(mutationArb, async (m) => {
        const c = writeCase(m);
        const clean = await outcome(c.cleanContacts, c.cleanMessages, twoThreads);
        assert.deepEqual(clean, await outcome(c.cleanContacts, c.cleanMessages), `${c.kind}: clean files`);
        const split = await outcome(c.contactsFile, c.messagesFile, twoThreads);
        assert.deepEqual(split, await outcome(c.contactsFile, c.messagesFile), `${c.kind}: mutated files`);
        assert.ok('error' in split, `${c.kind}: refused`);
      }),
      {
        seed: SEED,
        numRuns: runs,
        reporter: (r) => {
          if (r.failed) throw new Error(`${fc.defaultReportMessage(r)}\nreproduce: ${REPRODUCE}`);
        },
      },
    );
  });

  test('the real CLI: exit code 1, the same file:line:field on stderr, nothing published', async () => {
    // One mutation of a few different kinds, drawn from the seed.
    const picks = fc.sample(mutationArb, { seed: SEED, numRuns: 200 });
    const wanted: Kind[] = ['badUtf8', 'badSentAt', 'dupId', 'orgMismatch'];
    const cases = wanted.map((k) => writeCase(picks.find((p) => p.kind === k) ?? { ...picks[0], kind: k }));
    const env = baseEnv({ DATA_DIR: store.dataDir });
    const results = await Promise.all(
      cases.map((c) => importCli(env, { contactsFile: c.contactsFile, messagesFile: c.messagesFile })),
    );
    for (const [j, r] of results.entries()) {
      const c = cases[j];
      assert.equal(r.code, 1, `${c.kind}: exit code (${r.stderr})`);
      const detail = await readImport(c.contactsFile, c.messagesFile).then(
        () => assert.fail('accepted'),
        (err: ImportError) => err.detail,
      );
      assert.match(detail, expectedDetail(c));
      assert.ok(r.stderr.includes(`snapshot: ${detail}\nsnapshot: nothing was published\n`), `${c.kind}: ${r.stderr}`);
      assert.equal(r.stdout, '');
    }
    await assertStoreUnchanged('after the CLI runs');
  });
});
