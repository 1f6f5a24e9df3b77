/**
 * A snapshot whose chunks' CRCs are right but whose sections disagree with each other or with its
 * counts is refused as corrupt on load (section-checks.ts), naming the organization, the version
 * and what disagrees. Each change below is one a review made with the CRCs rewritten: the server
 * took it, then hung a serving thread (entry starts), read ~4 GB at start (dictionary offsets),
 * or answered 500 and wrong counts (the rest).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateDataset } from '../../../scripts/gen-lib.js';
import { buildIndex } from '../../../src/index/build.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { exportColumns, type FlatIndex, flattenIndex, type Section } from '../../../src/store/flat-index.js';
import { encodeSnapshot, parseManifest, SnapshotDecoder } from '../../../src/store/snapshot-format.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';

const { contacts, messages } = generateDataset({ messages: 3000, contacts: 40, organizations: 1, seed: 451 });
const orgId = contacts[0].organization_id;
const builder = new OrgDataBuilder(orgId);
for (const c of contacts) builder.addContact(c);
for (const m of messages) builder.addMessage(m, parseRfc3339(m.sent_at)!);
const data = builder.build();
let order: Uint32Array | undefined;
const built = buildIndex(data, { onOrder: (o) => (order = o) });
/** The built index's sections, with the export sections a snapshot carries. */
const flatten = (): FlatIndex => {
  const flat = flattenIndex(built, exportColumns(data, order!));
  // copies: the flat's sections are the built index's own arrays, and a test changes them
  for (const [name, a] of Object.entries(flat.sections)) flat.sections[name] = a.slice() as Section;
  return flat;
};

function load(flat: FlatIndex): FlatIndex {
  const enc = encodeSnapshot({ format: 2, flat }, 9);
  // (the manifest is complete once the chunks are written)
  const chunks = [...enc.chunks];
  const decoder = new SnapshotDecoder(
    parseManifest(enc.manifest(), { organizationId: orgId, version: 9 }),
    {},
    'serve',
  );
  for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
  return decoder.finishFlat();
}

test('the sections as built load', () => {
  assert.equal(load(flatten()).messageCount, 3000);
});

const CHANGES: ReadonlyArray<[string, (s: Record<string, Section>) => void, string]> = [
  [
    'an entry start far past the entries',
    (s) => {
      (s.entryStart as Uint32Array)[5] = 0xfffffff0;
    },
    'the entry starts disagree with the entries',
  ],
  [
    'a dictionary offset far past its bytes',
    (s) => {
      (s.tokenOffsets as Uint32Array)[5] = 0xf0000000;
    },
    'the token dictionary offsets go down',
  ],
  [
    'the combos cut short',
    (s) => (s.msgCombo = (s.msgCombo as Uint8Array).slice(0, 100)),
    'the message combos disagree with the messages',
  ],
  [
    'a combo of no channel',
    (s) => {
      (s.msgCombo as Uint8Array)[7] = 0x7f;
    },
    'a message combo is not a channel and direction',
  ],
  [
    'an entry of a contact past the contacts',
    (s) => {
      (s.entryContact as Uint16Array)[3] = 40;
    },
    'the entries disagree with the contacts',
  ],
  [
    'the entries cut short',
    (s) => (s.entryContact = (s.entryContact as Uint16Array).slice(0, 100)),
    'the entry starts disagree with the entries',
  ],
  [
    'a posting past the messages',
    (s) => {
      (s.storedPostings as Uint32Array)[0] = 3000;
    },
    'a posting is past the messages',
  ],
  [
    'a contact JSON offset past its bytes',
    (s) => {
      (s.contactJsonOffsets as Uint32Array)[10] = 1e9;
    },
    'the contact sections disagree with the contacts',
  ],
  [
    'two contacts of one id rank',
    (s) => {
      const rank = s.contactIdRank as Uint32Array;
      rank[0] = rank[1];
    },
    'the contact ranks are not a permutation',
  ],
  [
    'a token rank past the vocabulary',
    (s) => {
      (s.tokenRank as Uint32Array)[0] = 500_000;
    },
    'a token rank is past the vocabulary',
  ],
  [
    'the key frequencies cut short',
    (s) => (s.keyFrequency = (s.keyFrequency as Uint32Array).slice(0, 10)),
    'the per-key sections disagree with the keys',
  ],
];

for (const [what, change, detail] of CHANGES) {
  test(`refused: ${what}`, () => {
    const flat = flatten();
    change(flat.sections);
    assert.throws(() => load(flat), {
      message: `snapshot: corrupt snapshot of organization ${orgId} version 9: ${detail}`,
    });
  });
}
