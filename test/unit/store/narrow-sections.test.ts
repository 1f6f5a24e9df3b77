/**
 * narrowedSections: a small organization's per-key columns in 16 bits when every value fits, each
 * column on its own; a larger organization (more than 65,535 entries) left alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { narrowedSections } from '../../../src/store/narrow-sections.js';
import type { Section } from '../../../src/store/section.js';

function sections(over: Record<string, Section> = {}): Record<string, Section> {
  return {
    entryStart: Uint32Array.of(0, 2, 65_535),
    keyFrequency: Uint32Array.of(65_535, 1),
    tokenRank: Uint32Array.of(1, 0),
    tokenOffsets: Uint32Array.of(0, 3, 7),
    topSlot: Int32Array.of(-1, 32_767),
    msgCombo: Uint8Array.of(1, 2, 3),
    storedPostings: Uint32Array.of(70_000),
    ...over,
  };
}

const types = (entries: [string, Section][] | null) =>
  entries === null ? null : Object.fromEntries(entries.map(([k, a]) => [k, a.constructor.name]));

test('every per-key column that fits takes 16 bits, with its values; other sections are left as they are', () => {
  const given = sections();
  const out = narrowedSections(given)!;
  assert.deepEqual(types(out), {
    entryStart: 'Uint16Array',
    keyFrequency: 'Uint16Array',
    tokenRank: 'Uint16Array',
    tokenOffsets: 'Uint16Array',
    topSlot: 'Int16Array',
    msgCombo: 'Uint8Array',
    // a value over 16 bits, but not a per-key column: never narrowed
    storedPostings: 'Uint32Array',
  });
  for (const [name, a] of out) assert.deepEqual([...(a as Uint32Array)], [...(given[name] as Uint32Array)], name);
  assert.equal(out.find(([k]) => k === 'msgCombo')![1], given.msgCombo, 'the same array: copied later, once');
});

test('a column with a value over 16 bits keeps 32, the others still narrow', () => {
  const out = narrowedSections(
    sections({ keyFrequency: Uint32Array.of(65_536, 1), topSlot: Int32Array.of(-1, 32_768) }),
  );
  assert.deepEqual(types(out), {
    entryStart: 'Uint16Array',
    keyFrequency: 'Uint32Array',
    tokenRank: 'Uint16Array',
    tokenOffsets: 'Uint16Array',
    topSlot: 'Int32Array',
    msgCombo: 'Uint8Array',
    storedPostings: 'Uint32Array',
  });
  assert.equal(
    types(narrowedSections(sections({ topSlot: Int32Array.of(-32_769) })))!.topSlot,
    'Int32Array',
    'below -32,768',
  );
});

test('an organization of more than 65,535 entries, or a column already narrow, is left alone', () => {
  assert.equal(narrowedSections(sections({ entryStart: Uint32Array.of(0, 65_536) })), null);
  assert.equal(narrowedSections(sections({ entryStart: new Uint32Array(0) })), null);
  assert.equal(narrowedSections(sections({ entryStart: Uint16Array.of(0, 2) })), null, 'already narrowed');
  // a column of an unexpected type is not converted
  assert.equal(types(narrowedSections(sections({ tokenRank: Float64Array.of(1, 0) })))!.tokenRank, 'Float64Array');
});
