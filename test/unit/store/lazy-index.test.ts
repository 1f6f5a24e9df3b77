/**
 * lazyIndex: a load checks the flat at once (a snapshot missing a section is refused then, as
 * before), and wraps its OrgIndex only when something reads it, once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import type { OrgIndex } from '../../../src/index/org-index.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { executeSearch } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { type FlatIndex, flattenIndex, lazyIndex, postedIndex, shareFlat } from '../../../src/store/flat-index.js';
import { adoptPacked, packFlat, unpackFlat } from '../../../src/store/packed-flat.js';

const ORG = '0e0e0e0e-0000-4000-8000-000000000001';
const CONTACT = '4c4c4c4c-0000-4000-8000-000000000001';

function flat(contents = (i: number) => `quero o pedido ${i}`): FlatIndex {
  const b = new OrgDataBuilder(ORG);
  b.addContact({
    id: CONTACT,
    organization_id: ORG,
    name: 'Ana',
    phone: null,
    email: null,
    avatar_url: null,
    source: null,
  });
  for (let i = 0; i < 5; i++) {
    const sentAt = `2025-01-02T03:04:1${i}Z`;
    b.addMessage(
      {
        id: `m${i}`,
        organization_id: ORG,
        contact_id: CONTACT,
        conversation_id: 'c1',
        channel: 'instagram',
        direction: 'inbound',
        content: contents(i),
        sent_at: sentAt,
      },
      Date.parse(sentAt),
    );
  }
  return shareFlat(flattenIndex(buildIndex(b.build())));
}

test('lazyIndex wraps once, on first read, and answers as the built index', () => {
  const f = flat();
  const built = lazyIndex(f);
  assert.equal(built.messages, 5);
  assert.equal(built.contacts, 1);
  // a small organization: its sections and the dictionaries' lookup sections copied into one
  // block, the per-key columns in 16 bits (narrow-sections.ts), every value as loaded
  const again = built.flat;
  assert.notEqual(again, f);
  assert.deepEqual(Object.keys(again.sections), Object.keys(f.sections));
  const narrowed: Record<string, unknown> = {
    entryStart: Uint16Array,
    keyFrequency: Uint16Array,
    tokenRank: Uint16Array,
    tokenOffsets: Uint16Array,
    topSlot: Int16Array,
  };
  const block = again.sections.msgCombo.buffer;
  for (const [name, a] of Object.entries(f.sections)) {
    const b = again.sections[name];
    assert.equal(b.constructor, narrowed[name] ?? a.constructor, name);
    // (an empty section is the thread's one empty view of its type)
    if (b.length > 0) assert.ok(b.buffer === block, name);
    assert.deepEqual([...(b as Uint32Array)], [...(a as Uint32Array)], name);
  }
  // where each section lies (the packed places) is in that block too, so a thread the packed
  // flat is posted to holds a view of it, not a copy
  assert.equal(built.packed!.places.buffer, block);
  assert.equal(built.packed!.buffers.length, 1);
  // held packed: a second look is new views of the very same memory
  const third = built.flat.sections;
  for (const [name, a] of Object.entries(again.sections)) {
    assert.ok(third[name].buffer === a.buffer, name);
    assert.equal(third[name].byteOffset, a.byteOffset, name);
  }
  assert.equal(again.messageCount, f.messageCount);
  assert.equal(again.organizationId, f.organizationId);
  assert.equal(built.digest, f.digest);
  assert.ok(built.packed !== null && built.packed !== undefined);
  const first = built.index;
  assert.equal(built.index, first, 'the same index on every read');
  const parsed = parseSearchParams(`organization_id=${ORG}&q=pedido&messages_limit=2`);
  assert.ok(parsed.ok);
  const answer = executeSearch(first, parsed.request);
  assert.equal(answer.pagination.count, 1);
  assert.equal(answer.data[0].match_count, 5);
  assert.deepEqual(
    answer.data[0].messages.map((m) => m.id),
    ['m4', 'm3'],
  );
});

test('lazyIndex keeps a larger organization as loaded: 65,536 entries, the same memory and types', () => {
  // one message of 65,536 distinct words: a token an entry, more entries than 16 bits count
  const words = Array.from({ length: 0x10000 }, (_, i) => `w${i.toString(36)}`).join(' ');
  const f = flat((i) => (i === 0 ? words : `quero o pedido ${i}`));
  const built = lazyIndex(f);
  const again = built.flat;
  for (const [name, a] of Object.entries(f.sections)) {
    const b = again.sections[name];
    assert.equal(b.constructor, a.constructor, name);
    assert.equal(b.length, a.length, name);
    // (an empty section is the thread's one empty view of its type)
    if (a.length === 0) continue;
    assert.ok(b.buffer === a.buffer, name);
    assert.equal(b.byteOffset, a.byteOffset, name);
  }
  assert.deepEqual(newestTwo(built.index), ['m4', 'm3']);
});

test('a flat missing a section is refused by lazyIndex itself, before any read', () => {
  const f = flat();
  delete f.sections.msgCombo;
  assert.throws(() => lazyIndex(f), {
    message: `snapshot: organization ${ORG} has no section msgCombo`,
  });
});

test('packFlat: null for sections outside shared memory; one names array for every flat of one layout; unpackFlat its inverse', () => {
  const b = flat();
  assert.equal(
    packFlat({ ...b, sections: { ...b.sections, msgCombo: new Uint8Array(b.sections.msgCombo as Uint8Array) } }),
    null,
  );
  const one = packFlat(b)!;
  const two = packFlat(flat())!;
  assert.equal(one.names, two.names, 'the same frozen array');
  assert.ok(Object.isFrozen(one.names));
  // every section of one built flat sits in one buffer (shareFlat), found once
  assert.equal(one.buffers.length, 1);
  assert.ok(one.places instanceof Uint32Array, 'offsets under 4 GiB: 32-bit places');
  const back = unpackFlat(one);
  assert.deepEqual(back.contacts, []);
  for (const [name, a] of Object.entries(b.sections)) assert.deepEqual(back.sections[name], a, name);
  // every empty section of every flat this thread unpacks is one view of its type, not a view each
  const other = unpackFlat(two);
  const empty = Object.keys(b.sections).filter((name) => b.sections[name].length === 0);
  assert.ok(empty.length > 0);
  for (const name of empty) assert.ok(back.sections[name] === other.sections[name], name);
  // a posted packed flat (structured clone, as to a serving thread) unpacks over the same memory
  // (the clone's buffer objects are new, their memory is the same)
  const posted = structuredClone(one);
  const there = unpackFlat(posted);
  const mine = b.sections.msgCombo as Uint8Array,
    theirs = there.sections.msgCombo as Uint8Array;
  const before = mine[0];
  theirs[0] = before ^ 1;
  assert.equal(mine[0], before ^ 1, 'a write through the clone is seen in the original');
  theirs[0] = before;
});

test('packFlat keeps float64 places when an offset does not fit 32 bits (sections past 4 GiB)', () => {
  const b = flat();
  const buffer = b.sections.msgCombo.buffer as SharedArrayBuffer;
  // a stand-in for a view 8 GiB into a buffer (what packFlat reads of a section)
  const far = { constructor: Uint8Array, buffer, byteOffset: 2 ** 33, length: 3 } as unknown as Uint8Array;
  const packed = packFlat({ ...b, sections: { ...b.sections, far } })!;
  assert.ok(packed.places instanceof Float64Array);
  const i = packed.names.indexOf('far');
  assert.deepEqual([...packed.places.subarray(4 * i, 4 * i + 4)], [0, 0, 2 ** 33, 3]);
});

/** The newest two messages' ids of a `q=pedido` search over `index`. */
function newestTwo(index: OrgIndex): string[] {
  const parsed = parseSearchParams(`organization_id=${ORG}&q=pedido&messages_limit=2`);
  assert.ok(parsed.ok);
  return executeSearch(index, parsed.request).data[0].messages.map((m) => m.id);
}

test("postedIndex (a serving thread): the posted clone adopts the thread's names array, wraps on first read, answers as the built index", () => {
  const f = flat();
  deriveForPost(f);
  const posted = structuredClone(packFlat(f)!);
  const lazy = postedIndex(posted);
  const other = flat();
  deriveForPost(other);
  assert.notEqual(posted.names, packFlat(other)!.names, 'the clone came with a copy');
  assert.equal(lazy.packed!.names, packFlat(other)!.names, "the thread's one names array, not the clone's");
  assert.equal(lazy.messages, 5);
  assert.equal(lazy.isWrapped, false, 'nothing wrapped before a request reads it');
  assert.deepEqual(newestTwo(lazy.index), ['m4', 'm3']);
  assert.equal(lazy.isWrapped, true);
  // adopting an array that is already the thread's changes nothing
  assert.equal(adoptPacked(lazy.packed!), lazy.packed);
});

test('dropIfIdle lets the wrapped index go only after a period without reads; the next read wraps it again', () => {
  const lazy = lazyIndex(flat());
  assert.equal(lazy.dropIfIdle(), false, 'never wrapped: nothing to drop');
  const first = lazy.index;
  assert.equal(lazy.dropIfIdle(), false, 'read in this period: kept');
  assert.equal(lazy.index, first);
  assert.equal(lazy.dropIfIdle(), false, 'read again in the next period: kept');
  assert.equal(lazy.dropIfIdle(), true, 'a whole period without a read: dropped');
  assert.equal(lazy.isWrapped, false);
  assert.equal(lazy.dropIfIdle(), false, 'already dropped');
  // a request that still holds the old index keeps answering from it (the same memory)
  assert.deepEqual(newestTwo(first), ['m4', 'm3']);
  const again = lazy.index;
  assert.notEqual(again, first, 'wrapped again');
  assert.deepEqual(newestTwo(again), ['m4', 'm3']);
});

/** What the main thread does to a loaded flat before it posts it (lazyIndex checks and derives). */
function deriveForPost(f: FlatIndex): void {
  lazyIndex(f);
}
