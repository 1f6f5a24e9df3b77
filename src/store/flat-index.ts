/**
 * An OrgIndex as flat sections: every typed-array field of the index (TYPED_ARRAY_FIELDS, so a
 * column added there travels without a change here), the term dictionary as a UTF-8 string
 * column, the pair dictionary as two arrays, the contacts and the scalars. This is what a v2
 * snapshot stores and what the build worker hands the request thread; `wrapIndex` turns it back
 * into the OrgIndex the query code reads (the dictionaries read in place), `flattenIndex` the reverse.
 */
import { CHANNEL_COUNT, COMBO_VALUE } from '../index/layout.js';
import { contentStart, idStart, type RowStarts, rowOffsetsOf } from '../index/message-rows.js';
import { isPacked, unpackUuid } from '../index/packed-uuid.js';
import { type SentTimes, sentAtOf } from '../index/sent-times.js';
import { type KeyColumn, TYPED_ARRAY_FIELDS, type OrgIndex } from '../index/org-index.js';
import {
  buildTokenTable,
  type TokenTable,
  tokenTableSize,
  tokenTableType,
  type PairLookup,
  SharedPairDictionary,
  SharedTokenDictionary,
  sortPairs,
  type TokenLookup,
} from '../index/shared-dictionary.js';
import type { Contact, OrgData } from '../model/records.js';
import { type Section, SECTION_TYPES, type SectionType, sectionType, sectionView } from './section.js';
import { narrowedSections } from './narrow-sections.js';
import { adoptPacked, type PackedFlat, packFlat, placesLength, unpackFlat } from './packed-flat.js';

export { type Section, SECTION_TYPES, type SectionType, sectionType } from './section.js';

/**
 * Sections a snapshot carries only so that the import can be given back (loadSnapshot): the
 * messages' import order and their contacts. A server never loads them: no query reads them
 * (msgContact was 4 bytes a message of every replica's memory).
 */
export const EXPORT_SECTIONS = ['sourceOrder', 'msgContact'] as const;

/** The export sections of one build: see EXPORT_SECTIONS. */
export interface ExportColumns {
  /** ordinal -> position of the message in the import */
  readonly sourceOrder: Uint32Array;
  /** ordinal -> contact ordinal */
  readonly msgContact: Uint32Array;
}

/** The export sections of `data` built in answer order `order` (BuildOptions.onOrder). */
export function exportColumns(data: OrgData, order: Uint32Array): ExportColumns {
  const contact = data.messages.contact;
  const msgContact = new Uint32Array(order.length);
  for (let o = 0; o < order.length; o++) msgContact[o] = contact[order[o]];
  return { sourceOrder: order, msgContact };
}

/** Sections that are not index fields: the dictionaries, and the export sections. */
export const EXTRA_SECTIONS = ['tokenBytes', 'tokenOffsets', 'pairKeys', 'pairValues', ...EXPORT_SECTIONS] as const;

export interface FlatIndex {
  organizationId: string;
  messageCount: number;
  contactCount: number;
  pairMinFrequency: number;
  /**
   * contacts in ordinal order, rendered (spec key order); empty in a flat loaded to serve (no
   * query reads them: a page copies contactJsonBytes)
   */
  contacts: Contact[];
  /**
   * Every TYPED_ARRAY_FIELDS field, plus tokenBytes/tokenOffsets (token id t is the string
   * tokenBytes[tokenOffsets[t] .. tokenOffsets[t+1])), pairKeys/pairValues (the pairIds Map) and,
   * when known, the EXPORT_SECTIONS (so the import can be given back).
   */
  sections: Record<string, Section>;
  /** the SHA-256 its snapshot's manifest records (snapshots written before it have none) */
  digest?: string;
}

/** A built index's dictionary (a Map); a loaded one is never flattened again. */
function builtMap<K>(lookup: TokenLookup | PairLookup, what: string): Map<K, number> {
  if (!(lookup instanceof Map))
    throw new Error(`index: only a built index is flattened (its ${what} dictionary is a Map)`);
  return lookup as Map<K, number>;
}

/** The flat form of a built `index`: typed arrays by reference (no copy), the Maps as columns. */
export function flattenIndex(index: OrgIndex, exported?: ExportColumns): FlatIndex {
  const sections: Record<string, Section> = {};
  for (const f of TYPED_ARRAY_FIELDS) sections[f] = index[f] as Section;
  const tokenIds = builtMap<string>(index.tokenIds, 'term');
  const pairIds = builtMap<number>(index.pairIds, 'pair');
  // Token ids are 0..n-1 (buildIndex numbers them in first-seen order); a column by id.
  const byId: string[] = new Array(tokenIds.size);
  for (const [t, id] of tokenIds) {
    if (id >= byId.length || byId[id] !== undefined) throw new Error('index: token ids are not 0..n-1');
    byId[id] = t;
  }
  const offsets = new Uint32Array(byId.length + 1);
  let size = 0;
  for (let t = 0; t < byId.length; t++) {
    offsets[t] = size;
    size += Buffer.byteLength(byId[t], 'utf8');
  }
  offsets[byId.length] = size;
  const bytes = Buffer.allocUnsafe(size);
  for (let t = 0; t < byId.length; t++) bytes.write(byId[t], offsets[t], 'utf8');
  sections.tokenBytes = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  sections.tokenOffsets = offsets;
  const pairKeys = new Float64Array(pairIds.size),
    pairValues = new Uint32Array(pairIds.size);
  let i = 0;
  for (const [k, v] of pairIds) {
    pairKeys[i] = k;
    pairValues[i++] = v;
  }
  sections.pairKeys = pairKeys;
  sections.pairValues = pairValues;
  if (exported !== undefined) {
    sections.sourceOrder = exported.sourceOrder;
    sections.msgContact = exported.msgContact;
  }
  return {
    organizationId: index.organizationId,
    messageCount: index.messageCount,
    contactCount: index.contactCount,
    pairMinFrequency: index.pairMinFrequency,
    contacts: contactsOf(index),
    sections,
  };
}

/** The contact records of an index, decoded from its rendered JSON column (one object each). */
function contactsOf(index: OrgIndex): Contact[] {
  const bytes = index.contactJsonBytes,
    offsets = index.contactJsonOffsets;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Contact[] = new Array(index.contactCount);
  for (let c = 0; c < index.contactCount; c++)
    out[c] = JSON.parse(text.toString('utf8', offsets[c], offsets[c + 1])) as Contact;
  return out;
}

/**
 * Empty sections of the given types and lengths, all views into ONE SharedArrayBuffer (each at
 * an 8-byte aligned offset). One allocation rather than one a section: glibc serves blocks under
 * its adaptive mmap threshold (up to 32 MiB) from its heap, which it seldom gives back, so
 * per-section buffers made RSS creep up by most of an index a reload; one big block is mmapped
 * and unmapped whole when the replaced index is collected.
 */
export function allocateShared(specs: readonly (readonly [string, SectionType, number])[]): Record<string, Section> {
  let total = 0;
  const at: number[] = [];
  for (const [, type, length] of specs) {
    at.push(total);
    total += Math.ceil((length * SECTION_TYPES[type].BYTES_PER_ELEMENT) / 8) * 8;
  }
  const buffer = new SharedArrayBuffer(total);
  const out: Record<string, Section> = {};
  specs.forEach(([name, type, length], i) => {
    out[name] = sectionView(type, buffer, at[i], length);
  });
  return out;
}

/** Every section of `flat` (but the export sections) copied into shared memory, ready to share between threads. */
export function shareFlat(flat: FlatIndex): FlatIndex {
  return { ...flat, sections: shareSections(Object.entries(flat.sections).filter(([k]) => !isExportSection(k))) };
}

/** Copies of the given sections in one SharedArrayBuffer (allocateShared). */
export function shareSections(entries: readonly (readonly [string, Section])[]): Record<string, Section> {
  const sections = allocateShared(entries.map(([k, a]) => [k, sectionType(a), a.length] as const));
  copySections(entries, sections);
  return sections;
}

/** Copies each of `entries` into the section of its name in `into` (of its type and length). */
function copySections(entries: readonly (readonly [string, Section])[], into: Record<string, Section>): void {
  for (const [k, a] of entries) {
    new Uint8Array(into[k].buffer, into[k].byteOffset, a.byteLength).set(
      new Uint8Array(a.buffer, a.byteOffset, a.byteLength),
    );
  }
}

/** Whether section `name` is one of EXPORT_SECTIONS. */
export function isExportSection(name: string): boolean {
  return (EXPORT_SECTIONS as readonly string[]).includes(name);
}

/**
 * The import a flat index was built from (what `SnapshotStore.loadSnapshot` returns): messages back in
 * their import order when the snapshot carries sourceOrder, else in answer order. Reads the
 * message columns of today's index layout; tests and tools use it, never the request path.
 */
export function orgDataOf(flat: FlatIndex): OrgData {
  const s = flat.sections as Record<string, Section | undefined>;
  const n = flat.messageCount;
  // the byte columns hold JSON-escaped text (what responses copy): unescaped here
  const jsonText = (bytes: Uint8Array) => {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return (from: number, to: number): string => JSON.parse('"' + text.toString('utf8', from, to) + '"') as string;
  };
  const rows = s.msgRowBytes as Uint8Array,
    rowOffsets = rowOffsetsOf(s as unknown as RowStarts, n),
    rowString = jsonText(rows);
  const idAt = (o: number): string => {
    const from = idStart(rows, rowOffsets[o]),
      to = contentStart(rows, rowOffsets[o]);
    return isPacked(rows, from, to - from) ? unpackUuid(rows, from) : rowString(from, to);
  };
  const contentAt = (o: number): string => rowString(contentStart(rows, rowOffsets[o]), rowOffsets[o + 1]);
  const convOffsets = s.conversationIdOffsets as Uint32Array,
    convString = jsonText(s.conversationIdBytes as Uint8Array);
  const convAt = (c: number): string => convString(convOffsets[c], convOffsets[c + 1]);
  const msgContact = s.msgContact as Uint32Array | undefined,
    msgConversation = s.msgConversation as Uint16Array | Uint32Array,
    contactConversationStart = s.contactConversationStart as Uint32Array;
  if (msgContact === undefined) {
    throw new Error(
      `snapshot: organization ${flat.organizationId} has no msgContact section, so its import cannot be given back; publish it again with \`npm run snapshot -- import\``,
    );
  }
  const msgCombo = s.msgCombo as Uint8Array,
    times = s as unknown as SentTimes;
  const order = s.sourceOrder as Uint32Array | undefined;
  const id: string[] = new Array(n),
    conversationId: string[] = new Array(n),
    content: string[] = new Array(n);
  const contact = new Uint32Array(n),
    channel = new Uint8Array(n),
    direction = new Uint8Array(n),
    sentAt = new Float64Array(n);
  for (let o = 0; o < n; o++) {
    const i = order === undefined ? o : order[o];
    id[i] = idAt(o);
    content[i] = contentAt(o);
    conversationId[i] = convAt(contactConversationStart[msgContact[o]] + msgConversation[o]);
    contact[i] = msgContact[o];
    const combo = msgCombo[o] & COMBO_VALUE; // without its TIED bit
    channel[i] = combo % CHANNEL_COUNT; // comboOf's inverse
    direction[i] = Math.floor(combo / CHANNEL_COUNT);
    sentAt[i] = sentAtOf(times, o);
  }
  return {
    organizationId: flat.organizationId,
    contacts: flat.contacts,
    messages: { count: n, id, contact, conversationId, channel, direction, content, sentAt },
  };
}

/**
 * Adds to a loaded flat, once, the sections its dictionaries are read through (see
 * shared-dictionary.ts): `tokenTable`, the hash table over the token column, and `pairKeysSorted`
 * / `pairValuesSorted`. They are SharedArrayBuffers like the others and travel with them to every
 * serving thread; a flat that has them is left as it is. The build worker calls this, so the
 * threads that answer requests do not do the work. Throws on a malformed dictionary.
 */
export function deriveDictionaries(flat: FlatIndex): void {
  const s = flat.sections;
  const bytes = s.tokenBytes,
    offsets = s.tokenOffsets;
  const keys = s.pairKeys,
    values = s.pairValues;
  if (
    !(bytes instanceof Uint8Array) ||
    !(offsets instanceof Uint32Array || offsets instanceof Uint16Array) ||
    !(keys instanceof Float64Array) ||
    !(values instanceof Uint32Array) ||
    keys.length !== values.length ||
    offsets.length < 1 ||
    offsets[offsets.length - 1] !== bytes.length
  ) {
    throw new Error(`snapshot: malformed dictionary of organization ${flat.organizationId}`);
  }
  const table = !(s.tokenTable instanceof Uint16Array || s.tokenTable instanceof Uint32Array);
  const pairs = !(s.pairKeysSorted instanceof Float64Array) || !(s.pairValuesSorted instanceof Uint32Array);
  if (!table && !pairs) return;
  // in one shared block: each buffer costs every thread that holds the index an object and a
  // backing store record (three a small organization, against one for all its other sections)
  const out = allocateShared([
    ['tokenTable', tokenTableType(offsets.length - 1), table ? tokenTableSize(offsets.length - 1) : 0],
    ['pairKeysSorted', 'Float64Array', pairs ? keys.length : 0],
    ['pairValuesSorted', 'Uint32Array', pairs ? keys.length : 0],
  ]);
  if (table) s.tokenTable = buildTokenTable(bytes, offsets, out.tokenTable as TokenTable);
  if (pairs) {
    const sorted = sortPairs(keys, values, out.pairKeysSorted as Float64Array, out.pairValuesSorted as Uint32Array);
    s.pairKeysSorted = sorted.keys;
    s.pairValuesSorted = sorted.values;
  }
}

/**
 * The OrgIndex over `flat`'s sections, with no copy of them and no dictionary rebuilt: the term
 * and pair dictionaries are read in place (shared-dictionary.ts). The first wrap of a loaded
 * flat derives their lookup sections (a hash table of 2-4× the vocabulary's slots and the pair
 * keys sorted: 4-11 ms for 44k words and 3.7k pairs); later wraps, in other threads, take them
 * as they are.
 */
export function wrapIndex(flat: FlatIndex): OrgIndex {
  checkWrappable(flat);
  return wrapChecked(flat);
}

/** The sections an OrgIndex takes as they are, typed as the index reads them. */
type IndexSections = Pick<OrgIndex, (typeof TYPED_ARRAY_FIELDS)[number]>;

/**
 * wrapIndex of a flat that checkWrappable has passed (a LazyIndex's, checked at load).
 *
 * Every index is made by this one object literal, fields named in one order, so every
 * organization's index has the same hidden class (map). The query code's property loads then stay
 * monomorphic however many organizations a thread serves: made a map of its own each (each
 * index made a prototype for fast properties, before session 39), they went megamorphic past four
 * organizations, and `searchBody` round robin over 2,000 small organizations took 14-16 µs a
 * call against 8 µs with one shape; the 1M organization alone measured the same either way
 * (bench/RESULTS.md, session 39). A literal also holds its fields in the object, with no map and
 * descriptors of its own (~1 KB an organization and serving thread, measured). TypeScript checks
 * that the literal names every field of OrgIndex, TYPED_ARRAY_FIELDS among them.
 */
function wrapChecked(flat: FlatIndex): OrgIndex {
  const s = flat.sections as unknown as IndexSections & Record<string, Section>;
  return {
    organizationId: flat.organizationId,
    messageCount: flat.messageCount,
    contactCount: flat.contactCount,
    contactJsonBytes: s.contactJsonBytes,
    contactJsonOffsets: s.contactJsonOffsets,
    contactIdRank: s.contactIdRank,
    contactByIdRank: s.contactByIdRank,
    msgConversation: s.msgConversation,
    contactConversationStart: s.contactConversationStart,
    msgCombo: s.msgCombo,
    msgSentBlock: s.msgSentBlock,
    msgSentLow: s.msgSentLow,
    msgSentFar: s.msgSentFar,
    msgRowBytes: s.msgRowBytes,
    msgRowStartBase: s.msgRowStartBase,
    msgRowStartDelta: s.msgRowStartDelta,
    msgRowStartFar: s.msgRowStartFar,
    conversationIdBytes: s.conversationIdBytes,
    conversationIdOffsets: s.conversationIdOffsets,
    tokenIds: new SharedTokenDictionary(
      s.tokenBytes as Uint8Array,
      s.tokenOffsets as KeyColumn,
      s.tokenTable as TokenTable,
    ),
    pairIds: new SharedPairDictionary(s.pairKeysSorted as Float64Array, s.pairValuesSorted as Uint32Array),
    pairMinFrequency: flat.pairMinFrequency,
    entryStart: s.entryStart,
    entryContact: s.entryContact,
    entryPostBase: s.entryPostBase,
    entryPostFar: s.entryPostFar,
    entryFlags: s.entryFlags,
    entryNewestIn: s.entryNewestIn,
    storedPostings: s.storedPostings,
    keyFrequency: s.keyFrequency,
    summaryMin: s.summaryMin,
    summaryEntries: s.summaryEntries,
    summaryValues: s.summaryValues,
    tokenRank: s.tokenRank,
    seqStartBase: s.seqStartBase,
    seqStartDelta: s.seqStartDelta,
    seqStartFar: s.seqStartFar,
    tokenSeqBytes: s.tokenSeqBytes,
    topSlot: s.topSlot,
    topStart: s.topStart,
    topCount: s.topCount,
    topOffsets: s.topOffsets,
    topBits: s.topBits,
    inboundChannelBits: s.inboundChannelBits,
    inboundChannelStart: s.inboundChannelStart,
  };
}

/**
 * Throws what wrapIndex would throw for `flat` (a missing section, a malformed dictionary),
 * deriving the dictionaries' lookup sections on the way: a load refuses such a snapshot before
 * its index is ever wrapped (lazyIndex).
 */
export function checkWrappable(flat: FlatIndex): void {
  deriveDictionaries(flat);
  for (const f of TYPED_ARRAY_FIELDS) {
    if (flat.sections[f] === undefined)
      throw new Error(`snapshot: organization ${flat.organizationId} has no section ${f}`);
  }
}

/**
 * What a load gives the catalog: `flat`, checked now, and its OrgIndex wrapped on first use. With
 * serving threads the main thread never queries an index (each thread wraps its own), and an
 * organization no request reaches needs none: a wrapped index holds ~0.5 KB of object and two
 * dictionary objects besides the sections, and wrapping costs ~20 µs an organization of the start.
 */
export function lazyIndex(flat: FlatIndex): LazyIndex {
  checkWrappable(flat);
  const small = narrowedSections(flat.sections);
  if (small === null) return new LazyIndex(packFlat(flat) ?? flat);
  // a small organization's sections, per-key columns narrowed, its dictionaries' lookup sections
  // and where each lies (packFlat's places) in one shared block: one buffer instead of three
  // for the main thread and every serving thread that holds it
  const block = allocateShared([
    ...small.map(([k, a]) => [k, sectionType(a), a.length] as const),
    [PLACES, 'Uint32Array', placesLength(small.length)],
  ]);
  const places = block[PLACES] as Uint32Array;
  delete block[PLACES];
  copySections(small, block);
  const compact = { ...flat, sections: block };
  return new LazyIndex(packFlat(compact, places) ?? compact);
}

/** The name lazyIndex gives a small organization's places while it allocates its block (never a section). */
const PLACES = '(places)';

/**
 * A serving thread's index of a packed flat that the main thread posted: wrapped on the first
 * request that reaches it on this thread, not when it arrives. The main thread checked the flat
 * when it loaded it (lazyIndex) and derived its dictionaries' lookup sections, so the wrap cannot
 * fail and derives nothing. Wrapped on arrival, every organization cost each serving thread its
 * ~45 views and two dictionary objects from the start on, queried or not.
 */
export function postedIndex(packed: PackedFlat): LazyIndex {
  return new LazyIndex(adoptPacked(packed));
}

/**
 * An organization's flat, held packed when its sections are shared (as they are once loaded),
 * and its OrgIndex, wrapped when first read and let go again by dropIfIdle when no read came for a
 * while: a thread's views then follow the organizations that are being searched, not every one it
 * ever served.
 *
 * (a class: an object literal with a getter sat in dictionary mode, 448 bytes an organization)
 */
export class LazyIndex {
  private wrapped: OrgIndex | null = null;
  /** whether `index` was read since the last dropIfIdle */
  private read = false;
  readonly messages: number;
  readonly contacts: number;
  readonly digest: string | undefined;
  private readonly held: PackedFlat | FlatIndex;

  constructor(held: PackedFlat | FlatIndex) {
    this.messages = held.messageCount;
    this.contacts = held.contactCount;
    this.digest = held.digest;
    this.held = held;
  }

  /** The sections packed, or null (not shared). */
  get packed(): PackedFlat | null {
    return 'places' in this.held ? this.held : null;
  }

  /** The flat, as new views over the same memory when it is held packed (a copy of nothing). */
  get flat(): FlatIndex {
    return 'places' in this.held ? unpackFlat(this.held) : this.held;
  }

  get index(): OrgIndex {
    this.read = true;
    this.wrapped ??= wrapChecked(this.flat);
    return this.wrapped;
  }

  /** Whether the index is wrapped now (tests and tools). */
  get isWrapped(): boolean {
    return this.wrapped !== null;
  }

  /**
   * Lets the wrapped index go when nothing read it since the last call, and starts a new period:
   * called every IDLE_SWEEP_MS, an index no request reached for one to two periods is unwrapped,
   * and the next read wraps it again (~20 µs). A request holding the old one keeps it until it
   * ends (the same memory). True when it let one go.
   */
  dropIfIdle(): boolean {
    const drop = !this.read && this.wrapped !== null;
    if (drop) this.wrapped = null;
    this.read = false;
    return drop;
  }
}

/** How often the holders of LazyIndexes (the serving threads, the catalog) call dropIfIdle. */
const IDLE_SWEEP_MS = 5 * 60_000;

/**
 * Calls dropIfIdle on each of `indexes()` every IDLE_SWEEP_MS, for as long as the returned timer
 * runs (unref'd: it keeps no thread alive). An index without dropIfIdle (a test's built one) is kept.
 */
export function sweepIdle(indexes: () => Iterable<{ dropIfIdle?(): boolean }>): NodeJS.Timeout {
  return setInterval(() => {
    for (const index of indexes()) index.dropIfIdle?.();
  }, IDLE_SWEEP_MS).unref();
}
