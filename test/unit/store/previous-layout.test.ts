/**
 * A snapshot of the layout before message rows (src/index/message-rows.ts) has ids and contents
 * as two string columns: the decoder derives the rows on load, in shared memory, and the loaded
 * index answers byte for byte as the built one.
 * A snapshot of the layout before long-entry summaries (src/index/entry-summaries.ts) has every
 * other section: the decoder derives the summaries on load, equal to the ones the build writes,
 * in shared memory, and the loaded index answers byte for byte as the built one. A snapshot of
 * the layout before inline heads (layout.ts, HEAD_INLINE) cannot be read so, and is refused.
 * A snapshot of the layout before channel bitmaps (src/index/channel-bits.ts) gets them derived
 * on load, like the summaries.
 * A snapshot written before packed message ids (src/index/packed-uuid.ts) holds UUIDs as text:
 * it loads as it is and answers the same bytes as one that packs them.
 * A snapshot written before block starts (src/index/block-starts.ts) holds the starts of the
 * message rows and of the token sequences whole: the decoder encodes them on load, equal to the
 * ones the build writes, in shared memory.
 * A snapshot written before posting starts in the entry words (src/index/post-starts.ts) holds them
 * in a column of their own: the decoder encodes them into the words on load, equal to the build's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateDataset } from '../../../scripts/gen-lib.js';
import { buildIndex } from '../../../src/index/build.js';
import type { OrgIndex } from '../../../src/index/org-index.js';
import { CHANNEL_BITS_SECTIONS } from '../../../src/index/channel-bits.js';
import { SUMMARY_SECTIONS } from '../../../src/index/entry-summaries.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import type { OrgData } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { exportColumns, type FlatIndex, flattenIndex, type Section, wrapIndex } from '../../../src/store/flat-index.js';
import { encodeSnapshot, parseManifest, SnapshotDecoder } from '../../../src/store/snapshot-format.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { toGlobalConversations } from '../../helpers/global-conversations.js';
import { toSeparatePostStarts } from '../../helpers/separate-post-starts.js';
import { toTwoColumns } from '../../helpers/two-columns.js';
import { toWholeStarts } from '../../helpers/whole-starts.js';
import { toWholeTopEntries } from '../../helpers/whole-top-entries.js';
import { toFloatSentTimes } from '../../helpers/float-sent-times.js';
import { toWordSentTimes } from '../../helpers/word-sent-times.js';
import { sentAtOf } from '../../../src/index/sent-times.js';

const SUMMARIES = SUMMARY_SECTIONS;

/** One generated organization's data (scripts/gen-lib.ts) and its id. */
function generatedOrg(
  messageCount: number,
  contactCount: number,
  seed: number,
  ids: 'short' | 'uuid' = 'short',
): { orgId: string; data: OrgData } {
  const { contacts, messages } = generateDataset({
    messages: messageCount,
    contacts: contactCount,
    organizations: 1,
    seed,
    ids,
  });
  const orgId = contacts[0].organization_id;
  const b = new OrgDataBuilder(orgId);
  for (const c of contacts) b.addContact(c);
  for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return { orgId, data: b.build() };
}

/** Asserts that `index` answers each query byte for byte as `built` does. */
function assertSameAnswers(built: OrgIndex, index: OrgIndex, orgId: string, queries: readonly string[]): void {
  for (const q of queries) {
    const parsed = parseSearchParams(`organization_id=${orgId}&${q}`);
    assert.ok(parsed.ok);
    const want = Buffer.from(searchBody(built, parsed.request)).toString('utf8');
    assert.equal(Buffer.from(searchBody(index, parsed.request)).toString('utf8'), want, q);
  }
}

/** The sections of the block starts (src/index/block-starts.ts). */
const BLOCK_NAMES = [
  'msgRowStartBase',
  'msgRowStartDelta',
  'msgRowStartFar',
  'seqStartBase',
  'seqStartDelta',
  'seqStartFar',
] as const;

/** Asserts that each of `names` in `loaded` is shared memory holding the bytes of `built`'s. */
function assertSectionsAsBuilt(loaded: FlatIndex, built: OrgIndex, names: readonly (keyof OrgIndex)[]): void {
  for (const name of names) {
    const a = loaded.sections[name];
    const b = built[name] as Section;
    assert.ok(a.buffer instanceof SharedArrayBuffer, `${name} is shared memory`);
    assert.deepEqual(
      Buffer.from(a.buffer, a.byteOffset, a.byteLength),
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      name,
    );
  }
}

/** Encodes `flat` as version `version` and decodes it for `purpose` (throws as the decoder does). */
function roundTrip(orgId: string, flat: FlatIndex, version: number, purpose: 'serve' | 'export'): FlatIndex {
  const enc = encodeSnapshot({ format: 2, flat }, version);
  const chunks = [...enc.chunks];
  const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version }), {}, purpose);
  for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
  return decoder.finishFlat();
}

/** The index built from `data` and its answer order (what exportColumns takes). */
function builtWithOrder(data: OrgData): { built: OrgIndex; order: Uint32Array } {
  let order: Uint32Array | undefined;
  const built = buildIndex(data, {
    onOrder: (o) => {
      order = o;
    },
  });
  return { built, order: order! };
}

/**
 * Asserts that each change, made to `built` flattened (and first turned into a previous layout by
 * `toPrevious`, if given), is refused as corrupt for `detail`.
 */
function assertChangesCorrupt<S>(
  orgId: string,
  built: OrgIndex,
  toPrevious: ((flat: FlatIndex) => void) | null,
  changes: ReadonlyArray<(s: S) => void>,
  detail: string,
): void {
  for (const change of changes) {
    const flat = flattenIndex(built);
    toPrevious?.(flat);
    change(flat.sections as unknown as S);
    assertCorrupt(orgId, flat, detail);
  }
}

/**
 * `data`'s index, flattened with its export sections, turned into a previous layout by
 * `toPrevious` and loaded, once to serve and once to export: the built index and the two loads.
 */
function previousLayoutLoads(
  orgId: string,
  data: OrgData,
  toPrevious: (flat: FlatIndex) => void,
): { built: OrgIndex; order: Uint32Array; loads: FlatIndex[] } {
  const { built, order } = builtWithOrder(data);
  const loads = (['serve', 'export'] as const).map((purpose) => {
    const flat = flattenIndex(built, exportColumns(data, order));
    toPrevious(flat);
    return roundTrip(orgId, flat, 2, purpose);
  });
  return { built, order, loads };
}

/** Asserts that `flat`, as version 9 to serve, is refused as corrupt for `detail`. */
function assertCorrupt(orgId: string, flat: FlatIndex, detail: string): void {
  assert.throws(() => roundTrip(orgId, flat, 9, 'serve'), {
    message: `snapshot: corrupt snapshot of organization ${orgId} version 9: ${detail}`,
  });
}

/** Asserts that `flat`, as version 9 to serve, is refused as another layout for `detail`, naming the command. */
function assertAnotherLayout(orgId: string, flat: FlatIndex, detail: string): void {
  assert.throws(() => roundTrip(orgId, flat, 9, 'serve'), {
    message: `snapshot: organization ${orgId} version 9 ${detail} (another index layout); publish it again with \`npm run snapshot -- import\``,
  });
}

/** Asserts that `built` in a previous layout (`toPrevious`) that kept section `kept` too is refused as having both. */
function assertBothLayoutsRefused(
  orgId: string,
  built: OrgIndex,
  toPrevious: (flat: FlatIndex) => void,
  kept: string,
  what: string,
): void {
  const flat = flattenIndex(built);
  const section = flat.sections[kept];
  toPrevious(flat);
  flat.sections[kept] = section;
  assertAnotherLayout(orgId, flat, `has both layouts of ${what}`);
}

describe('a snapshot written before message rows', () => {
  it('loads with its rows derived from the two columns, equal to the built ones, and answers the same', () => {
    const { orgId, data } = generatedOrg(3000, 40, 11);
    const { built, order } = builtWithOrder(data);
    const flat = flattenIndex(built, exportColumns(data, order));
    toTwoColumns(flat);
    // and before summaries too: both are derived
    for (const name of SUMMARIES) delete flat.sections[name];
    const enc = encodeSnapshot({ format: 2, flat }, 2);
    const chunks = [...enc.chunks];
    const manifest = parseManifest(enc.manifest(), { organizationId: orgId, version: 2 });
    assert.ok(manifest.sections!.some(([name]) => name === 'msgIdOffsets'));
    assert.ok(!manifest.sections!.some(([name]) => name === 'msgRowBytes'));
    for (const purpose of ['serve', 'export'] as const) {
      const decoder = new SnapshotDecoder(manifest, {}, purpose);
      for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
      const loaded = decoder.finishFlat();
      assertSectionsAsBuilt(loaded, built, ['msgRowBytes', ...BLOCK_NAMES]);
      for (const name of [
        'msgIdBytes',
        'msgIdOffsets',
        'msgContentBytes',
        'msgContentOffsets',
        'msgRowOffsets',
        'seqByteStart',
      ])
        assert.equal(loaded.sections[name], undefined, `${name} is let go`);
      assertSameAnswers(built, wrapIndex(loaded), orgId, [
        'q=the',
        'q=que&direction=all&messages_limit=20',
        'keywords=que,de&channel=whatsapp',
        'q=o%20com&direction=all',
      ]);
    }
  });

  it('is refused when it has some of the two columns, or both layouts, naming the command', () => {
    const { orgId, data } = generatedOrg(200, 4, 12);
    const partial = flattenIndex(buildIndex(data));
    toTwoColumns(partial);
    delete partial.sections.msgContentOffsets;
    const mixed = flattenIndex(buildIndex(data));
    mixed.sections.msgIdBytes = new Uint8Array(0);
    for (const [version, flat] of [
      [7, partial],
      [8, mixed],
    ] as const) {
      const enc = encodeSnapshot({ format: 2, flat }, version);
      assert.ok([...enc.chunks].length > 0); // the manifest lists the chunks once they are made
      assert.throws(() => new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version })), {
        message: `snapshot: organization ${orgId} version ${version} has an incomplete or mixed set of message id and content sections (another index layout); publish it again with \`npm run snapshot -- import\``,
      });
    }
  });

  it('is refused as corrupt when its offsets run past its bytes', () => {
    const { orgId, data } = generatedOrg(200, 4, 13);
    const flat = flattenIndex(buildIndex(data));
    toTwoColumns(flat);
    const offsets = flat.sections.msgContentOffsets as Uint32Array;
    offsets[offsets.length - 1] += 1;
    const enc = encodeSnapshot({ format: 2, flat }, 9);
    const chunks = [...enc.chunks];
    const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 9 }));
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    assert.throws(() => decoder.finishFlat(), {
      message: `snapshot: corrupt snapshot of organization ${orgId} version 9: the message id or content sections disagree with the counts`,
    });
  });
});

describe('a snapshot written before long-entry summaries', () => {
  it('loads with its summaries derived, equal to the built ones, and answers the same', () => {
    // few contacts, many messages: entries of 32 postings and more (the default minimum)
    const { orgId, data } = generatedOrg(6000, 12, 7);
    const { built, order } = builtWithOrder(data);
    assert.ok(built.summaryEntries.length > 0, 'the data has long entries');
    const flat = flattenIndex(built, exportColumns(data, order));
    for (const name of SUMMARIES) delete flat.sections[name];

    const enc = encodeSnapshot({ format: 2, flat }, 1);
    const chunks = [...enc.chunks]; // the manifest lists the chunks once they are made
    const manifest = parseManifest(enc.manifest(), { organizationId: orgId, version: 1 });
    assert.ok(!manifest.sections!.some(([name]) => (SUMMARIES as readonly string[]).includes(name)));
    const decoder = new SnapshotDecoder(manifest, {}, 'serve');
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    const loaded = decoder.finishFlat();
    for (const name of SUMMARIES) {
      const a = loaded.sections[name];
      assert.ok(a.buffer instanceof SharedArrayBuffer, `${name} is shared memory`);
      assert.deepEqual([...a], [...built[name]], name);
    }

    assertSameAnswers(built, wrapIndex(loaded), orgId, [
      'q=the',
      'q=que&direction=all',
      'q=que&direction=outbound',
      'q=que&limit=3&offset=2',
    ]);
  });

  it('stored summaries of the wrong shape are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(3000, 6, 9);
    const flat = flattenIndex(buildIndex(data));
    const values = flat.sections.summaryValues as Uint32Array;
    assert.ok(values.length > 0, 'the data has long entries');
    flat.sections.summaryValues = values.slice(0, values.length - 1);
    const enc = encodeSnapshot({ format: 2, flat }, 5);
    const chunks = [...enc.chunks];
    const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 5 }));
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    assert.throws(() => decoder.finishFlat(), {
      message: `snapshot: corrupt snapshot of organization ${orgId} version 5: the summary sections disagree with the entries`,
    });
  });

  it('is refused when it has some summary sections but not all', () => {
    const { orgId, data } = generatedOrg(200, 4, 8);
    const flat = flattenIndex(buildIndex(data));
    delete flat.sections.summaryValues;
    const enc = encodeSnapshot({ format: 2, flat }, 4);
    assert.ok([...enc.chunks].length > 0); // the manifest lists the chunks once they are made
    assert.throws(() => new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 4 })), {
      message: `snapshot: organization ${orgId} version 4 has some summary sections but not all (another index layout); publish it again with \`npm run snapshot -- import\``,
    });
  });
});

describe('a snapshot written before channel bitmaps', () => {
  /** Every token a top-list slot, so that every token has channel bitmaps. */
  const everyToken = { topLists: { minEntries: 1, length: 8 } };
  const CHANNEL_QUERIES = [
    'q=que&channel=whatsapp',
    'q=que&channel=telegram&limit=3&offset=1',
    'q=the&channel=email&messages_limit=5',
    'q=de&channel=instagram&direction=inbound',
    'q=que&channel=whatsapp&direction=all',
  ];

  it('loads with its bitmaps derived, equal to the built ones, and answers the same', () => {
    const { orgId, data } = generatedOrg(4000, 60, 12);
    const built = buildIndex(data, everyToken);
    assert.ok(built.inboundChannelBits.length > 0, 'the index has bitmaps');
    const flat = flattenIndex(built);
    for (const name of CHANNEL_BITS_SECTIONS) delete flat.sections[name];
    const enc = encodeSnapshot({ format: 2, flat }, 2);
    const chunks = [...enc.chunks];
    const manifest = parseManifest(enc.manifest(), { organizationId: orgId, version: 2 });
    assert.ok(!manifest.sections!.some(([name]) => (CHANNEL_BITS_SECTIONS as readonly string[]).includes(name)));
    const decoder = new SnapshotDecoder(manifest, {}, 'serve');
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    const loaded = decoder.finishFlat();
    for (const name of CHANNEL_BITS_SECTIONS) {
      const a = loaded.sections[name];
      assert.ok(a.buffer instanceof SharedArrayBuffer, `${name} is shared memory`);
      assert.deepEqual([...a], [...built[name]], name);
    }
    assertSameAnswers(built, wrapIndex(loaded), orgId, CHANNEL_QUERIES);
  });

  it('stored bitmaps of the wrong shape are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(800, 10, 13);
    const flat = flattenIndex(buildIndex(data, everyToken));
    const start = flat.sections.inboundChannelStart as Uint32Array;
    flat.sections.inboundChannelStart = start.map((x, i) => (i === start.length - 1 ? x + 1 : x));
    const enc = encodeSnapshot({ format: 2, flat }, 3);
    const chunks = [...enc.chunks];
    const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 3 }));
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    assert.throws(() => decoder.finishFlat(), {
      message: `snapshot: corrupt snapshot of organization ${orgId} version 3: the channel bitmap sections disagree with the top lists`,
    });
  });

  it('is refused when it has one of the two bitmap sections', () => {
    const { orgId, data } = generatedOrg(200, 4, 14);
    const flat = flattenIndex(buildIndex(data));
    delete flat.sections.inboundChannelStart;
    const enc = encodeSnapshot({ format: 2, flat }, 4);
    assert.ok([...enc.chunks].length > 0); // the manifest lists the chunks once they are made
    assert.throws(() => new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 4 })), {
      message: `snapshot: organization ${orgId} version 4 has some channel bitmap sections but not all (another index layout); publish it again with \`npm run snapshot -- import\``,
    });
  });
});

describe('a snapshot written before inline heads', () => {
  it('is refused, naming the organization, the version and the command that publishes it again', () => {
    // that layout stored every message of an entry in a section named postings, and had no
    // keyFrequency: its first messages are not where this layout reads them
    const { orgId, data } = generatedOrg(300, 4, 10);
    const flat = flattenIndex(buildIndex(data));
    const { storedPostings, keyFrequency, ...rest } = flat.sections;
    assert.ok(storedPostings.length > 0 && keyFrequency.length > 0);
    flat.sections = { ...rest, postings: storedPostings };
    const enc = encodeSnapshot({ format: 2, flat }, 6);
    assert.ok([...enc.chunks].length > 0); // the manifest lists the chunks once they are made
    assert.throws(() => new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version: 6 })), {
      message: `snapshot: organization ${orgId} version 6 has an unknown section postings (another index layout); publish it again with \`npm run snapshot -- import\``,
    });
  });
});

describe('a snapshot written before packed message ids', () => {
  it('loads with its UUIDs as text and answers as a snapshot with them packed', () => {
    const { orgId, data } = generatedOrg(3000, 40, 14, 'uuid');
    const packed = buildIndex(data);
    const text = buildIndex(data, { packIds: false });
    // every message id is a UUID: 19 bytes less a message packed
    assert.equal(text.msgRowBytes.length - packed.msgRowBytes.length, 19 * 3000);
    const queries = ['q=the', 'q=que&direction=all&messages_limit=20', 'keywords=que,de&channel=whatsapp'];
    for (const [version, built] of [
      [3, text],
      [4, packed],
    ] as const) {
      const enc = encodeSnapshot({ format: 2, flat: flattenIndex(built) }, version);
      const chunks = [...enc.chunks];
      const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId: orgId, version }));
      for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
      const loaded = wrapIndex(decoder.finishFlat());
      assert.equal(loaded.msgRowBytes.length, built.msgRowBytes.length);
      assertSameAnswers(packed, loaded, orgId, queries);
    }
  });
});

describe('a snapshot written before block starts', () => {
  it('loads with its starts encoded, equal to the built ones, and answers the same', () => {
    const { orgId, data } = generatedOrg(3000, 40, 15);
    const { built, loads } = previousLayoutLoads(orgId, data, toWholeStarts);
    for (const loaded of loads) {
      assertSectionsAsBuilt(loaded, built, BLOCK_NAMES);
      for (const name of ['msgRowOffsets', 'seqByteStart'])
        assert.equal(loaded.sections[name], undefined, `${name} is let go`);
      assertSameAnswers(built, wrapIndex(loaded), orgId, [
        'q=the',
        'q=que&direction=all&messages_limit=20',
        'q=o%20com&direction=all',
        'keywords=que,de,%22para%20o%22&channel=whatsapp',
      ]);
    }
  });

  it('is refused when it has both layouts of one column, naming the command', () => {
    const { orgId, data } = generatedOrg(200, 4, 16);
    const flat = flattenIndex(buildIndex(data));
    flat.sections.seqByteStart = new Uint32Array(201);
    assertAnotherLayout(orgId, flat, 'has both layouts of the starts of the token sequences');
  });

  it('whole starts that run past their bytes, or go down, are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(200, 4, 17);
    for (const [name, what, change] of [
      ['msgRowOffsets', 'the message rows', (a: Uint32Array) => (a[a.length - 1] += 1)],
      ['seqByteStart', 'the token sequences', (a: Uint32Array) => (a[5] = a[6] + 1)],
    ] as const) {
      const flat = flattenIndex(buildIndex(data));
      toWholeStarts(flat);
      change(flat.sections[name] as Uint32Array);
      assertCorrupt(orgId, flat, `${what} disagree with the counts`);
    }
  });

  it('stored block starts of the wrong shape are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(200, 4, 18);
    const cases: Array<[string, (s: Record<string, Uint32Array | Uint16Array>) => void]> = [
      ['the message rows', (s) => (s.msgRowStartDelta[3] = s.msgRowStartDelta[2] - 1)],
      ['the message rows', (s) => (s.msgRowStartBase = s.msgRowStartBase.subarray(1))],
      ['the token sequences', (s) => (s.seqStartDelta[0] = 0xffff)],
      ['the token sequences', (s) => (s.seqStartDelta[s.seqStartDelta.length - 1] += 1)],
    ];
    for (const [what, change] of cases) {
      const flat = flattenIndex(buildIndex(data));
      change(flat.sections as unknown as Record<string, Uint32Array | Uint16Array>);
      assertCorrupt(orgId, flat, `${what} disagree with the counts`);
    }
  });
});

/** The sections of the posting starts (src/index/post-starts.ts). */
const POST_NAMES = ['entryPostBase', 'entryPostFar', 'entryNewestIn'] as const;

describe('a snapshot written before posting starts in the entry words', () => {
  it('loads with its starts encoded into the words, equal to the built ones, and answers the same', () => {
    // 9,000 messages in 12 contacts: entries of hundreds of postings, so some blocks are far in
    // both layouts (this one holds 2^18 - 1 of distance at 9,000 messages; the previous, 65,535)
    for (const [messages, contacts, seed] of [
      [3000, 40, 21],
      [9000, 12, 22],
    ] as const) {
      const { orgId, data } = generatedOrg(messages, contacts, seed);
      const { built, order } = builtWithOrder(data);
      for (const purpose of ['serve', 'export'] as const) {
        const flat = flattenIndex(built, exportColumns(data, order));
        toSeparatePostStarts(flat);
        assert.equal(flat.sections.entryNewestIn.length, built.entryFlags.length);
        const loaded = roundTrip(orgId, flat, 2, purpose);
        assertSectionsAsBuilt(loaded, built, POST_NAMES);
        assert.equal(loaded.sections.entryPostOffset, undefined, 'entryPostOffset is let go');
        assertSameAnswers(built, wrapIndex(loaded), orgId, [
          'q=the',
          'q=que&direction=all&messages_limit=20',
          'q=que&direction=outbound&limit=100&offset=3',
          'q=o%20com&direction=all',
          'keywords=que,de,%22para%20o%22&channel=whatsapp',
          'keywords=que,de,para,com&match=all&direction=all',
          'q=de&from=2024-03-01&to=2024-09-30&channel=email',
        ]);
      }
    }
  });

  it('starts that go down or run past the postings, and ranks outside the organization, are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 23);
    const cases: Array<(s: Record<string, Uint32Array | Uint16Array | Int32Array>) => void> = [
      (s) => (s.entryPostOffset[5] = s.entryPostOffset[6] + 1),
      (s) => (s.entryPostOffset[s.entryPostOffset.length - 1] += 1),
      (s) => (s.entryNewestIn[2] = 300),
      (s) => (s.entryNewestIn = s.entryNewestIn.subarray(1)),
      (s) => (s.entryPostBase[0] = -5),
    ];
    for (const change of cases) {
      const flat = flattenIndex(buildIndex(data));
      toSeparatePostStarts(flat);
      change(flat.sections as unknown as Record<string, Uint32Array | Uint16Array | Int32Array>);
      assertCorrupt(orgId, flat, 'the posting starts disagree with the entries');
    }
  });

  it('stored starts of the wrong shape are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 24);
    const cases: Array<(s: Record<string, Uint32Array | Int32Array>) => void> = [
      (s) => (s.entryNewestIn = s.entryNewestIn.subarray(1)),
      (s) => (s.entryPostBase = s.entryPostBase.subarray(1)),
      (s) => (s.entryNewestIn[4] |= 0x7ff << 21),
      (s) => (s.entryPostBase[1] = -1000),
    ];
    for (const change of cases) {
      const flat = flattenIndex(buildIndex(data));
      change(flat.sections as unknown as Record<string, Uint32Array | Int32Array>);
      assertCorrupt(orgId, flat, 'the posting starts disagree with the entries');
    }
  });
});

/** The sections of the conversations numbered by contact (src/index/conversations.ts). */
const CONVERSATION_NAMES = [
  'msgConversation',
  'contactConversationStart',
  'conversationIdBytes',
  'conversationIdOffsets',
] as const;

describe('a snapshot written before conversations numbered by contact', () => {
  it('loads with its conversations renumbered, equal to the built ones, and answers the same', () => {
    for (const [messages, contacts, seed] of [
      [3000, 40, 31],
      [2000, 3, 32],
    ] as const) {
      const { orgId, data } = generatedOrg(messages, contacts, seed);
      const { built, loads } = previousLayoutLoads(orgId, data, toGlobalConversations);
      for (const loaded of loads) {
        assertSectionsAsBuilt(loaded, built, CONVERSATION_NAMES);
        // read to renumber, then let go (an index to serve has no contact a message)
        assert.equal(loaded.sections.msgContact, undefined);
        assertSameAnswers(built, wrapIndex(loaded), orgId, [
          'q=the&messages_limit=20',
          'q=que&direction=all&messages_limit=20',
          'keywords=que,de,para,com&match=all&direction=all',
          'keywords=que,de,%22para%20o%22,com,the&direction=all&limit=100&messages_limit=20',
          'q=de&from=2024-03-01&to=2024-09-30&channel=email',
        ]);
      }
    }
  });

  it('gives an export its messages back with their conversation ids', () => {
    const { orgId, data } = generatedOrg(1500, 20, 33);
    const { built, order } = builtWithOrder(data);
    const flat = flattenIndex(built, exportColumns(data, order));
    toGlobalConversations(flat);
    const enc = encodeSnapshot({ format: 2, flat }, 4);
    const chunks = [...enc.chunks];
    const decoder = new SnapshotDecoder(
      parseManifest(enc.manifest(), { organizationId: orgId, version: 4 }),
      {},
      'export',
    );
    for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
    assert.deepEqual(decoder.finishData().messages.conversationId, data.messages.conversationId);
  });

  it('is refused, naming the command, when it has no contact a message to renumber by', () => {
    const { orgId, data } = generatedOrg(300, 4, 34);
    const { built, order } = builtWithOrder(data);
    const flat = flattenIndex(built, exportColumns(data, order));
    toGlobalConversations(flat);
    delete flat.sections.msgContact;
    delete flat.sections.sourceOrder;
    assertAnotherLayout(
      orgId,
      flat,
      'has neither contactConversationStart nor msgContact to number its conversations by',
    );
  });

  it('conversations of two contacts, or out of range, are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 35);
    const { built, order } = builtWithOrder(data);
    const cases: Array<(s: Record<string, Uint32Array>) => void> = [
      // message 0's conversation given to another contact's message
      (s) => {
        const o = s.msgContact.findIndex((c) => c !== s.msgContact[0]);
        s.msgConversation[o] = s.msgConversation[0];
      },
      (s) => (s.msgConversation[7] = s.conversationIdOffsets.length - 1),
      (s) => (s.msgContact[3] = 4),
    ];
    for (const change of cases) {
      const flat = flattenIndex(built, exportColumns(data, order));
      toGlobalConversations(flat);
      change(flat.sections as unknown as Record<string, Uint32Array>);
      assertCorrupt(orgId, flat, 'the conversation sections disagree with the counts');
    }
  });

  it('stored numbers of the wrong shape are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 36);
    const cases: Array<(s: Record<string, Uint32Array | Uint16Array>) => void> = [
      (s) => (s.contactConversationStart = s.contactConversationStart.subarray(1)),
      (s) => (s.contactConversationStart[2] = s.contactConversationStart[3] + 1),
      (s) => (s.contactConversationStart[4] += 1),
      (s) => (s.msgConversation[5] = 60000),
      (s) => (s.msgConversation = Uint32Array.from(s.msgConversation)),
    ];
    for (const change of cases) {
      const flat = flattenIndex(buildIndex(data));
      change(flat.sections as unknown as Record<string, Uint32Array | Uint16Array>);
      assertCorrupt(orgId, flat, 'the conversation sections disagree with the counts');
    }
  });
});

describe('a snapshot written before top-list offsets', () => {
  it('loads with its lists converted to offsets, equal to the built ones, and answers the same', () => {
    const { orgId, data } = generatedOrg(6000, 40, 41);
    // lists for every token in 20 entries or more, of 8 entries: pages that fit in them, and not
    const built = buildIndex(data, { topLists: { minEntries: 20, length: 8 } });
    assert.ok(built.topOffsets.length > 0);
    for (const purpose of ['serve', 'export'] as const) {
      const flat = flattenIndex(built);
      toWholeTopEntries(flat);
      const loaded = roundTrip(orgId, flat, 2, purpose);
      assertSectionsAsBuilt(loaded, built, ['topOffsets']);
      assert.equal(loaded.sections.topEntries, undefined, 'topEntries is let go');
      assertSameAnswers(built, wrapIndex(loaded), orgId, [
        'q=que',
        'q=que&direction=all&limit=5',
        'q=de&direction=outbound&limit=3&offset=2',
        'keywords=que,de,para&limit=4',
        'keywords=que,de&match=all&limit=6&direction=all',
      ]);
    }
  });

  it('is refused when it has both layouts of the top lists, naming the command', () => {
    const { orgId, data } = generatedOrg(300, 4, 42);
    const built = buildIndex(data, { topLists: { minEntries: 1, length: 4 } });
    assertBothLayoutsRefused(orgId, built, toWholeTopEntries, 'topOffsets', 'the top lists');
  });

  it('entries outside their token, and stored offsets or starts of the wrong shape, are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 43);
    const built = buildIndex(data, { topLists: { minEntries: 1, length: 4 } });
    const whole: Array<(s: Record<string, Uint32Array | Int32Array | Uint16Array>) => void> = [
      (s) => (s.topEntries[0] = s.entryStart[s.entryStart.length - 1]),
      (s) => (s.topEntries[1] += 10_000),
      (s) => (s.topStart[1] = s.topStart[2] + 1),
      (s) => (s.topSlot[s.topSlot.findIndex((x) => x >= 0)] = -1),
    ];
    assertChangesCorrupt(orgId, built, toWholeTopEntries, whole, 'the top list sections disagree with the entries');
    const stored: Array<(s: Record<string, Uint32Array | Int32Array | Uint16Array>) => void> = [
      (s) => (s.topOffsets[0] = 60_000),
      (s) => (s.topStart = s.topStart.subarray(1)),
      (s) => (s.topOffsets = s.topOffsets.subarray(1)),
    ];
    assertChangesCorrupt(orgId, built, null, stored, 'the top list sections disagree with the entries');
  });
});

/** The records an export decodes from `flat`, as version 4. */
function exportedData(orgId: string, flat: FlatIndex): OrgData {
  const enc = encodeSnapshot({ format: 2, flat }, 4);
  const chunks = [...enc.chunks]; // (the manifest counts them as they are written)
  const decoder = new SnapshotDecoder(
    parseManifest(enc.manifest(), { organizationId: orgId, version: 4 }),
    {},
    'export',
  );
  for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
  return decoder.finishData();
}

/**
 * Asserts that a snapshot whose sent times `toPrevious` wrote in an older layout loads, to serve
 * and to export, with the built index's blocks, the older `names` let go, the same answers as the
 * built index (a date window among them), and, exported, every time as imported.
 */
function assertSentTimesConverted(toPrevious: (flat: FlatIndex) => void, names: readonly string[], seed: number): void {
  const { orgId, data } = generatedOrg(4000, 30, seed);
  const { built, order, loads } = previousLayoutLoads(orgId, data, toPrevious);
  for (const loaded of loads) {
    assertSectionsAsBuilt(loaded, built, ['msgSentBlock', 'msgSentLow', 'msgSentFar', 'msgCombo']);
    for (const name of names) assert.equal(loaded.sections[name], undefined, `${name} is let go`);
    const index = wrapIndex(loaded);
    const from = new Date(sentAtOf(built, 2500)).toISOString();
    const to = new Date(sentAtOf(built, 1200)).toISOString();
    assertSameAnswers(built, index, orgId, [
      'q=que',
      'q=que&direction=all&limit=5',
      `q=de&direction=outbound&limit=3&from=${from}&to=${to}`,
      'keywords=que,de,para&limit=4&messages_limit=5',
    ]);
  }
  const flat = flattenIndex(built, exportColumns(data, order));
  toPrevious(flat);
  assert.deepEqual(exportedData(orgId, flat).messages.sentAt, data.messages.sentAt);
}

describe('a snapshot written before sent times in seconds and milliseconds', () => {
  it('loads with its times encoded, equal to the built ones, and answers the same', () => {
    assertSentTimesConverted(toFloatSentTimes, ['msgSentAt'], 44);
  });

  it('is refused when it has both layouts of the sent times, naming the command', () => {
    const { orgId, data } = generatedOrg(300, 4, 45);
    assertBothLayoutsRefused(orgId, buildIndex(data), toFloatSentTimes, 'msgSentLow', 'the sent times');
  });

  it('times that are not integers, go up or miss a message, and stored times of the wrong shape, are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 46);
    const built = buildIndex(data);
    const float: Array<(s: Record<string, Float64Array>) => void> = [
      (s) => (s.msgSentAt[3] += 0.5),
      (s) => (s.msgSentAt[4] = Number.NaN),
      (s) => (s.msgSentAt[5] = s.msgSentAt[0] + 1),
      (s) => (s.msgSentAt = s.msgSentAt.subarray(1)),
    ];
    assertChangesCorrupt(orgId, built, toFloatSentTimes, float, 'the sent times disagree with the counts or go up');
    const stored: Array<(s: Record<string, Float64Array | Uint32Array | Uint16Array>) => void> = [
      (s) => (s.msgSentLow[7] = (s.msgSentLow[7] & ~1023) | 1000),
      (s) => (s.msgSentLow[9] = s.msgSentLow[0] + (1 << 10)),
      (s) => (s.msgSentLow = s.msgSentLow.subarray(1)),
      (s) => (s.msgSentBlock = s.msgSentBlock.subarray(1)),
      (s) => (s.msgSentBlock[0] = 0.5),
      (s) => (s.msgSentBlock[0] = Number.NaN), // far, but msgSentFar is empty
    ];
    assertChangesCorrupt(orgId, built, null, stored, 'the sent times disagree with the counts or go up');
  });
});

describe('a snapshot written before sent-time blocks (three words a message)', () => {
  it('loads with its times encoded as blocks, equal to the built ones, and answers the same', () => {
    assertSentTimesConverted(toWordSentTimes, ['msgSentBase', 'msgSentWords', 'msgSentHigh'], 47);
  });

  it('is refused when it has two layouts of the sent times, or misses a section of its own, naming the command', () => {
    const { orgId, data } = generatedOrg(300, 4, 48);
    const built = buildIndex(data);
    assertBothLayoutsRefused(orgId, built, toWordSentTimes, 'msgSentFar', 'the sent times');
    // the two older layouts together
    const both = flattenIndex(built);
    toWordSentTimes(both);
    both.sections.msgSentAt = new Float64Array(300);
    assertAnotherLayout(orgId, both, 'has both layouts of the sent times');
    for (const name of ['msgSentBase', 'msgSentWords', 'msgSentHigh']) {
      const flat = flattenIndex(built);
      toWordSentTimes(flat);
      delete flat.sections[name];
      assertAnotherLayout(orgId, flat, `has no section ${name}`);
    }
  });

  it('words that go up, miss a message or hold a millisecond of 1000 are refused as corrupt', () => {
    const { orgId, data } = generatedOrg(300, 4, 49);
    const built = buildIndex(data);
    const words: Array<(s: Record<string, Float64Array | Uint16Array>) => void> = [
      (s) => (s.msgSentWords[3 * 7 + 2] = 1000),
      (s) => (s.msgSentWords[3 * 9 + 1] = s.msgSentWords[1] + 1),
      (s) => (s.msgSentWords = s.msgSentWords.subarray(3)),
      (s) => (s.msgSentHigh = new Uint16Array(3)),
      (s) => (s.msgSentBase = Float64Array.of(0.5)),
    ];
    assertChangesCorrupt(orgId, built, toWordSentTimes, words, 'the sent times disagree with the counts or go up');
  });
});
