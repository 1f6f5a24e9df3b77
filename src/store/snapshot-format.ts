/**
 * The persisted form of one organization, shared by both stores.
 *
 * Format 2 (written today) is the organization's index, already built, as flat sections
 * (flat-index.ts): a server loads it by reading, verifying and copying each section once into
 * shared memory, with no rebuild. Format 1 (older) holds the imported record columns; it is still
 * read, and its index built on load.
 *
 * A snapshot is a list of chunks (each at most CHUNK_MAX bytes, except a chunk holding one single
 * value larger than that) plus a manifest. A chunk is a concatenation of msgpack "parts", each
 * part one slice of one column; typed-array columns travel as raw little-endian bytes. The
 * manifest carries the magic, the format version, the counts and a CRC32 of every chunk, and
 * ends with a CRC32 of itself. A format-2 manifest also carries the SHA-256 of its content
 * (`digest`), so a reload can tell a re-published identical index without copying it. Plain maps/arrays only (no msgpackr records), so nothing outside
 * the bytes is needed to decode.
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { type Prefault, prefaultShared } from './prefault.js';
import { endianness } from 'node:os';
import { Packr, Unpackr } from 'msgpackr';
import { type ContactsPart, contactsPartAt, skipValue } from './msgpack-skip.js';
import { sectionsDisagree } from './section-checks.js';
import { buildIndex } from '../index/build.js';
import { buildChannelBits, CHANNEL_BITS_SECTIONS, type ChannelBits, channelBitsFit } from '../index/channel-bits.js';
import { buildEntrySummaries, SUMMARY_MIN_DEFAULT, SUMMARY_SECTIONS, SUMMARY_WIDTH } from '../index/entry-summaries.js';
import { markTies, noInbound, rankMask, TOP_MODES } from '../index/layout.js';
import { rowsOf } from '../index/message-rows.js';
import { encodeSentTimes, SENT_TIME_SECTIONS, type SentTimes, sentTimesFit } from '../index/sent-times.js';
import { decodeWordSentTimes, WORD_SENT_SECTIONS, type WordSentTimes } from '../index/sent-times-words.js';
import { blockStartsFit, encodeBlockStarts } from '../index/block-starts.js';
import { conversationsFit, numberByContact } from '../index/conversations.js';
import {
  type ContactColumn,
  type ConversationColumn,
  contactColumn,
  contactColumnType,
  narrowColumnType,
} from '../index/org-index.js';
import { offsetsOfEntries, topOffsetsFit } from '../index/top-lists.js';
import { decodeSeparatePostStarts, encodePostStarts, postStartsFit } from '../index/post-starts.js';
import { OlderFormatError, type LoadFlatOptions } from './snapshot-store.js';
import { CHANNELS, DIRECTIONS, type Contact, type OrgData } from '../model/records.js';
import {
  allocateShared,
  flattenIndex,
  orgDataOf,
  sectionType,
  SECTION_TYPES,
  shareFlat,
  shareSections,
  exportColumns,
  isExportSection,
  type FlatIndex,
  type Section,
  type SectionType,
} from './flat-index.js';

export const SNAPSHOT_MAGIC = 'cms-snapshot';
/** 2: the built index as flat sections (flat-index.ts). 1: raw record columns, still read (rebuilt on load). */
export const SNAPSHOT_FORMAT_VERSION = 2;
const READABLE_FORMATS = [1, 2];
/** Upper bound of a chunk: small enough for one Redis value, one read, one write. */
export const CHUNK_MAX = 4 * 1024 * 1024;
// A part is cut when its payload reaches this, leaving room for msgpack overhead under CHUNK_MAX.
const PART_TARGET = 3 * 1024 * 1024;

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
/** msgpack nil: one byte to decode (see releaseSource). */
const NIL = Uint8Array.of(0xc0);

/**
 * msgpackr keeps a DataView of the last buffer it decoded in a module variable: after a load,
 * the last chunk's whole buffer (4 MB) stayed alive for as long as the process, found in a heap
 * snapshot of a server at ready. Decoding one byte replaces that view; a chunk's parts are copied
 * into the sections, so nothing else holds it.
 */
function releaseSource(): void {
  unpackr.unpack(NIL);
}

type StringColumn = 'id' | 'conversationId' | 'content';
type ByteColumn = 'contact' | 'channel' | 'direction' | 'sentAt';
const STRING_COLUMNS: readonly StringColumn[] = ['id', 'conversationId', 'content'];
const BYTE_COLUMNS: readonly ByteColumn[] = ['contact', 'channel', 'direction', 'sentAt'];
const BYTES_PER: Record<ByteColumn, number> = { contact: 4, channel: 1, direction: 1, sentAt: 8 };

/** One chunk as recorded in the manifest. */
export interface ChunkInfo {
  length: number;
  crc32: number;
}

/** Everything needed to read and verify a snapshot's chunks. */
export interface Manifest {
  magic: string;
  format: number;
  organizationId: string;
  version: number;
  createdAt: string;
  contacts: number;
  messages: number;
  chunks: ChunkInfo[];
  /** format 2: [name, element type, element count] of every section */
  sections?: [string, SectionType, number][];
  /** format 2 */
  pairMinFrequency?: number;
  /**
   * format 2, written since the digest was added: SHA-256 (hex) of every chunk's bytes in order,
   * then of contentDescriptor(manifest). Equal digests mean equal indexes (see loadChangedFlatIndex).
   */
  digest?: string;
}

/** What of a manifest, besides the chunks, decides the index a snapshot loads to: in the digest. */
function contentDescriptor(
  m: Pick<Manifest, 'format' | 'organizationId' | 'contacts' | 'messages' | 'pairMinFrequency' | 'sections'>,
): string {
  const { format, organizationId, contacts, messages, pairMinFrequency, sections } = m;
  return JSON.stringify({ format, organizationId, contacts, messages, pairMinFrequency, sections });
}

// Parts: ['c', start, rows] contacts; ['s', column, start, strings]; ['b', column, byteOffset, bytes].
type ContactRow = [string, string | null, string | null, string | null, string | null, string | null];
type Part = ['c', number, ContactRow[]] | ['s', StringColumn, number, string[]] | ['b', ByteColumn, number, Uint8Array];

function bytesOf(a: Uint32Array | Uint8Array | Float64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Contacts in parts of about PART_TARGET bytes: ['c', start, rows] (both formats). */
function* contactParts(contacts: readonly Contact[]): Generator<['c', number, ContactRow[]]> {
  let rows: ContactRow[] = [],
    start = 0,
    size = 0;
  for (let i = 0; i < contacts.length; i++) {
    const c = contacts[i];
    const row: ContactRow = [c.id, c.name, c.phone, c.email, c.avatar_url, c.source];
    rows.push(row);
    for (const f of row) size += f === null ? 1 : Buffer.byteLength(f) + 5;
    if (size >= PART_TARGET) {
      yield ['c', start, rows];
      start = i + 1;
      rows = [];
      size = 0;
    }
  }
  if (rows.length > 0 || contacts.length === 0) yield ['c', start, rows];
}

function* parts(data: OrgData): Generator<Part> {
  yield* contactParts(data.contacts);
  const m = data.messages;
  // String columns go out in slices so no buffer grows near the 2 GB limit of one allocation.
  for (const col of STRING_COLUMNS) {
    const values = m[col];
    let from = 0;
    let size = 0;
    for (let i = 0; i < m.count; i++) {
      size += Buffer.byteLength(values[i]) + 5;
      if (size >= PART_TARGET) {
        yield ['s', col, from, values.slice(from, i + 1)];
        from = i + 1;
        size = 0;
      }
    }
    if (from < m.count) yield ['s', col, from, values.slice(from, m.count)];
  }
  for (const col of BYTE_COLUMNS) {
    const bytes = bytesOf(m[col]);
    for (let off = 0; off < bytes.length; off += PART_TARGET)
      yield ['b', col, off, bytes.subarray(off, off + PART_TARGET)];
  }
}

/**
 * The format-1 (older layout) encoder: raw record columns, from which a loader rebuilds the index.
 * Kept for tests of the upgrade path and for `publishSnapshot(data, { format: 1 })`.
 */
function partsV1(data: OrgData): Generator<Part> {
  return parts(data);
}

// Parts of format 2: ['c', start, rows] contacts as in format 1; ['a', section, byteOffset, bytes].
type PartV2 = ['c', number, ContactRow[]] | ['a', string, number, Uint8Array];

function* partsV2(flat: FlatIndex): Generator<PartV2> {
  yield* contactParts(flat.contacts);
  for (const [name, a] of Object.entries(flat.sections)) {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let off = 0; off < bytes.length; off += PART_TARGET)
      yield ['a', name, off, bytes.subarray(off, off + PART_TARGET)];
  }
}

/**
 * Chunk `index` checked against the manifest (known, not seen before, length and CRC32), then
 * unpacked into its parts; marks it seen. Both formats' decoders use it. With `skippedContacts`
 * (a load that keeps no contact records: a server's), each contacts part is stepped over without
 * decoding its rows (msgpack-skip.ts) and its header pushed there instead; the other parts are
 * decoded one by one.
 */
function verifiedParts<T>(
  manifest: Manifest,
  seen: boolean[],
  index: number,
  chunk: Uint8Array,
  corrupt: (detail: string) => Error,
  skippedContacts?: ContactsPart[],
): T[] {
  verifyChunk(manifest, seen, index, chunk, corrupt);
  // no array of a part is longer than the contacts or the messages (skipValue's claim)
  const maxItems = Math.max(manifest.contacts, manifest.messages, 16);
  try {
    if (skippedContacts === undefined) {
      for (let at = 0; at < chunk.length; ) at = skipValue(chunk, at, maxItems);
      return unpackr.unpackMultiple(chunk) as T[];
    }
    const parts: T[] = [];
    for (let at = 0; at < chunk.length; ) {
      const contacts = contactsPartAt(chunk, at, maxItems);
      if (contacts !== null) {
        skippedContacts.push(contacts);
        at = contacts.end;
        continue;
      }
      const end = skipValue(chunk, at, maxItems);
      parts.push(unpackr.unpack(chunk.subarray(at, end)) as T);
      at = end;
    }
    return parts;
  } catch (err) {
    throw corrupt(`chunk ${index}: ${(err as Error).message}`);
  } finally {
    releaseSource();
  }
}

/** Bytes a piece of copyInto's detour: under glibc's mmap threshold, so kept in its heap, and L2-sized. */
const BOUNCE_BYTES = 64 * 1024;
/** Parts shorter than this are copied directly: a few thousand bytes either way, not worth two calls. */
const DETOUR_MIN_BYTES = 4096;
let bounce: Uint8Array | null = null;

/**
 * dst.set(src, at). A section's memory is shared (a SharedArrayBuffer), and V8 copies into shared
 * memory with relaxed atomic stores: word by word when source and destination are 8-byte aligned
 * alike, else a byte at a time. A part's bytes sit in its chunk after msgpack's header, at any
 * alignment: 81 ms a 256 MiB copy against 21 ms aligned (bench/RESULTS.md, session 31). Such a
 * part (DETOUR_MIN_BYTES or more) goes through a plain buffer, put at the destination's alignment
 * (an ordinary memmove), then across aligned: 64 KiB at a time, so the detour costs no more memory
 * than that.
 */
export function copyInto(dst: Uint8Array, at: number, src: Uint8Array): void {
  const shift = (dst.byteOffset + at) & 7;
  if (src.length < DETOUR_MIN_BYTES || ((src.byteOffset - shift) & 7) === 0) {
    dst.set(src, at);
    return;
  }
  bounce ??= new Uint8Array(BOUNCE_BYTES + 8);
  for (let from = 0; from < src.length; from += BOUNCE_BYTES) {
    const n = Math.min(BOUNCE_BYTES, src.length - from);
    bounce.set(src.subarray(from, from + n), shift);
    dst.set(bounce.subarray(shift, shift + n), at + from);
  }
}

/** The error of a snapshot whose bytes disagree with its manifest (every decoder's). */
function corruptSnapshot(m: Manifest, detail: string): Error {
  return new Error(`snapshot: corrupt snapshot of organization ${m.organizationId} version ${m.version}: ${detail}`);
}

/** Checks chunk `index` against the manifest's length and CRC32, once (`seen`). */
function verifyChunk(
  manifest: Manifest,
  seen: boolean[],
  index: number,
  chunk: Uint8Array,
  corrupt: (detail: string) => Error,
): void {
  const info = manifest.chunks[index];
  if (info === undefined || seen[index]) throw corrupt(`unexpected chunk ${index}`);
  if (chunk.length !== info.length || crc32(chunk) !== info.crc32) throw corrupt(`chunk ${index} checksum mismatch`);
  seen[index] = true;
}

/** What a store writes: a format-2 flat index (built once, here) or, on request, format-1 columns. */
export type PreparedSnapshot = { format: 1; data: OrgData } | { format: 2; flat: FlatIndex };

/** Builds the index of `data` (format 2, the default) once, before any version is allocated. */
export function prepareSnapshot(
  data: OrgData,
  format: 1 | 2 = SNAPSHOT_FORMAT_VERSION,
  consumeText = false,
): PreparedSnapshot {
  if (format === 1) {
    // format 1 stores the content strings, which prepared data no longer holds
    if (data.prepared !== undefined) throw new Error("snapshot: format 1 cannot store an import's prepared text");
    return { format: 1, data };
  }
  let order: Uint32Array | undefined;
  const index = buildIndex(data, {
    onOrder: (o) => {
      order = o;
    },
    consumeText,
  });
  return { format: 2, flat: flattenIndex(index, exportColumns(data, order!)) };
}

/**
 * Encodes lazily, one chunk at a time, so a publisher holds one chunk beside the data.
 * Returns the chunks; call `manifest()` on the result once they are all consumed.
 *
 * `reuse` > 0: full chunks cycle through that many buffers, so chunk k is written into chunk
 * (k - reuse)'s: the consumer must be done with chunk k - reuse when it asks for chunk k (a
 * writer that awaits each chunk: 1). Every 64 MB allocated outside the heap triggers a
 * mark-compact, ~50 ms each at 10M messages: a chunk allocated each time cost 9 s of a 10M
 * snapshot's 17 s of writing.
 */
export function encodeSnapshot(
  prepared: PreparedSnapshot,
  version: number,
  reuse = 0,
): { chunks: Iterable<Uint8Array>; manifest(): Uint8Array } {
  if (endianness() !== 'LE') throw new Error('snapshot: only little-endian hosts are supported');
  const infos: ChunkInfo[] = [];
  const hash = createHash('sha256');
  let digest: string | undefined;
  const source: Iterable<unknown> = prepared.format === 1 ? partsV1(prepared.data) : partsV2(prepared.flat);
  function* chunks(): Generator<Uint8Array> {
    // Each part is copied once, straight into its chunk (packr reuses its output buffer across
    // pack() calls, so a copy is needed): a chunk is filled whole, not concatenated from copies,
    // in a buffer of the ring when the consumer allows (`reuse`), else a new one.
    let chunk: Buffer | null = null,
      size = 0;
    // with `reuse`: the ring of chunk buffers, and the slot the next one is written into
    const ring: Buffer[] = [];
    let slot = 0;
    let fromRing = false;
    const flush = (): Uint8Array => {
      // a chunk far from full (a small snapshot's, or the last) gets a buffer of its size, so an
      // in-flight chunk never pins 4 MB for a few bytes
      const out = size < CHUNK_MAX / 4 ? Buffer.from(chunk!.subarray(0, size)) : chunk!.subarray(0, size);
      // a copy leaves its ring buffer free for the next chunk; a view holds it until `reuse` more
      if (fromRing && out.buffer === chunk!.buffer) slot = (slot + 1) % reuse;
      infos.push({ length: out.length, crc32: crc32(out) });
      hash.update(out);
      chunk = null;
      size = 0;
      return out;
    };
    for (const part of source) {
      const encoded = packr.pack(part);
      if (size > 0 && size + encoded.length > CHUNK_MAX) yield flush();
      // a single part larger than CHUNK_MAX is a chunk of its own size
      if (chunk === null) {
        fromRing = reuse > 0 && encoded.length <= CHUNK_MAX;
        chunk = fromRing
          ? (ring[slot] ??= Buffer.allocUnsafeSlow(CHUNK_MAX))
          : Buffer.allocUnsafeSlow(Math.max(CHUNK_MAX, encoded.length));
      }
      chunk.set(encoded, size);
      size += encoded.length;
    }
    if (size > 0) yield flush();
  }
  const common = { magic: SNAPSHOT_MAGIC, version, createdAt: new Date().toISOString() };
  return {
    chunks: chunks(),
    manifest: () =>
      encodeManifest(
        prepared.format === 1
          ? {
              ...common,
              format: 1,
              organizationId: prepared.data.organizationId,
              contacts: prepared.data.contacts.length,
              messages: prepared.data.messages.count,
              chunks: infos,
            }
          : withDigest({
              ...common,
              format: 2,
              organizationId: prepared.flat.organizationId,
              contacts: prepared.flat.contactCount,
              messages: prepared.flat.messageCount,
              chunks: infos,
              pairMinFrequency: prepared.flat.pairMinFrequency,
              sections: Object.entries(prepared.flat.sections).map(([name, a]) => [name, sectionType(a), a.length]),
            }),
      ),
  };
  /** the manifest with its digest, once every chunk went through the hash (computed once) */
  function withDigest(m: Manifest): Manifest {
    digest ??= hash.update(contentDescriptor(m)).digest('hex');
    return { ...m, digest };
  }
}

/** msgpack of the manifest followed by the CRC32 (big-endian u32) of those bytes. */
export function encodeManifest(manifest: Manifest): Uint8Array {
  const body = Buffer.from(packr.pack(manifest));
  const out = Buffer.alloc(body.length + 4);
  body.copy(out);
  out.writeUInt32BE(crc32(body), body.length);
  return out;
}

/**
 * A copy of `s` that holds its own characters. msgpackr decodes a manifest's short strings as
 * slices of one string of the whole manifest (~1.5 KB): an organization id or digest kept from it
 * kept all of it (2,000 organizations: 3.1 MB of manifests in the heap a thread that loaded them).
 */
function ownString(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** Reads and checks a manifest; `ref` names what the caller asked for, for messages and a sanity check. */
export function parseManifest(bytes: Uint8Array, ref: { organizationId: string; version: number }): Manifest {
  const what = `organization ${ref.organizationId} version ${ref.version}`;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 5 || crc32(buf.subarray(0, buf.length - 4)) !== buf.readUInt32BE(buf.length - 4)) {
    throw new Error(`snapshot: manifest checksum mismatch for ${what}`);
  }
  let m: Manifest;
  try {
    m = unpackr.unpack(buf.subarray(0, buf.length - 4)) as Manifest;
  } catch (err) {
    throw new Error(`snapshot: unreadable manifest for ${what}: ${(err as Error).message}`);
  } finally {
    releaseSource();
  }
  if (m === null || typeof m !== 'object' || m.magic !== SNAPSHOT_MAGIC)
    throw new Error(`snapshot: not a snapshot manifest for ${what}`);
  if (!READABLE_FORMATS.includes(m.format)) {
    throw new Error(
      `snapshot: unknown format version ${JSON.stringify(m.format)} for organization ${ref.organizationId}`,
    );
  }
  if (m.organizationId !== ref.organizationId || m.version !== ref.version) {
    throw new Error(`snapshot: manifest names organization ${m.organizationId} version ${m.version}, expected ${what}`);
  }
  if (!Number.isSafeInteger(m.contacts) || !Number.isSafeInteger(m.messages) || !Array.isArray(m.chunks)) {
    throw new Error(`snapshot: malformed manifest for ${what}`);
  }
  if (m.format === 2 && (!Array.isArray(m.sections) || !Number.isSafeInteger(m.pairMinFrequency))) {
    throw new Error(`snapshot: malformed manifest for ${what}`);
  }
  return m;
}

/**
 * Decodes a snapshot of either readable format from its manifest and its chunks, added in any
 * order (every chunk is checked against its CRC32). `finishFlat` gives the index to serve:
 * format 2 as read (sections in SharedArrayBuffers, no rebuild), format 1 rebuilt from its
 * record columns. `finishData` gives the import back (tests and tools).
 */
export class SnapshotDecoder {
  private readonly v1: RecordColumnsDecoder | null;
  private readonly v2: SectionsDecoder | null;
  private readonly purpose: DecodePurpose;
  /**
   * The snapshot's digest is LoadFlatOptions.unchanged: its content is the index in service, so
   * its chunks are only verified (length and CRC32, as a load does), nothing is decoded or copied,
   * and finishChanged() gives null. A corrupt or truncated one is refused the same.
   */
  readonly unchanged: boolean;
  private readonly manifest: Manifest;
  private readonly seen: boolean[];

  /**
   * `purpose` 'serve': only finishFlat will be asked for, so the export sections (the import's
   * own order and each message's contact, which no query reads) are neither allocated nor copied
   * (8 bytes a message less at the peak of a load); 'export' keeps them for finishData.
   */
  constructor(manifest: Manifest, options: LoadFlatOptions = {}, purpose: DecodePurpose = 'export') {
    this.purpose = purpose;
    this.manifest = manifest;
    this.unchanged =
      purpose === 'serve' &&
      manifest.format === 2 &&
      typeof manifest.digest === 'string' &&
      manifest.digest === options.unchanged;
    this.seen = this.unchanged ? new Array(manifest.chunks.length).fill(false) : [];
    if (this.unchanged) {
      this.v1 = this.v2 = null;
      return;
    }
    if (manifest.format === 1 && options.build === false) {
      throw new OlderFormatError(
        `snapshot: organization ${manifest.organizationId} version ${manifest.version} is format 1: its index must be built`,
      );
    }
    this.v1 = manifest.format === 1 ? new RecordColumnsDecoder(manifest) : null;
    this.v2 = manifest.format === 1 ? null : new SectionsDecoder(manifest, purpose === 'export');
  }

  /** A load given up (a chunk not read): stops what works for it in the background. */
  abandon(): void {
    this.v2?.release();
  }

  add(index: number, chunk: Uint8Array): void {
    if (this.unchanged) verifyChunk(this.manifest, this.seen, index, chunk, (d) => this.corrupt(d));
    else (this.v1 ?? this.v2!).add(index, chunk);
  }

  /**
   * The index to serve, or null for an `unchanged` snapshot (every chunk added and verified,
   * else it throws): what SnapshotStore.loadChangedFlatIndex gives.
   */
  finishChanged(): FlatIndex | null {
    if (!this.unchanged) return this.finishFlat();
    if (this.seen.some((s) => !s)) throw this.corrupt('missing chunks');
    return null;
  }

  private corrupt(detail: string): Error {
    return corruptSnapshot(this.manifest, detail);
  }

  finishFlat(): FlatIndex {
    if (this.unchanged) throw new Error('snapshot: an unchanged snapshot is not decoded (finishChanged)');
    if (this.v2) return this.v2.finish(false);
    // The older layout carries the records: the index is built here (in the build worker).
    const flat = shareFlat(flattenIndex(buildIndex(this.v1!.finish())));
    // as format 2's: no contact records to serve (see SectionsDecoder's contacts)
    if (this.purpose === 'serve') flat.contacts = [];
    return flat;
  }

  finishData(): OrgData {
    if (this.purpose !== 'export') throw new Error('snapshot: a decoder made to serve cannot give the import back');
    return this.v1 ? this.v1.finish() : orgDataOf(this.v2!.finish(true));
  }
}

let layoutCache: Map<string, SectionType> | null = null;

/** Every section a format-2 snapshot of this build's index layout has, with its element type. */
function expectedLayout(): Map<string, SectionType> {
  if (layoutCache) return layoutCache;
  // The types come from an index built by this very code, so a column added to TYPED_ARRAY_FIELDS
  // (or one whose type changes) is part of the layout without a change here.
  const empty: OrgData = {
    organizationId: '',
    contacts: [],
    messages: {
      count: 0,
      id: [],
      contact: new Uint32Array(0),
      conversationId: [],
      channel: new Uint8Array(0),
      direction: new Uint8Array(0),
      content: [],
      sentAt: new Float64Array(0),
    },
  };
  const flat = flattenIndex(buildIndex(empty));
  layoutCache = new Map(Object.entries(flat.sections).map(([k, a]) => [k, sectionType(a)]));
  return layoutCache;
}

const UPGRADE = 'publish it again with `npm run snapshot -- import`';

/**
 * Groups of sections a snapshot of the layout before them lacks: derived on load from the
 * sections it has, so such snapshots keep loading, at full speed, without being published again.
 * The long-entry summaries: a pass over 5% of the postings, ~10 ms at 1M messages; the frequent
 * tokens' channel bitmaps: a pass over their entries' flags, ~25 ms at 1M.
 */
const DERIVED_GROUPS: ReadonlyArray<{ readonly what: string; readonly names: readonly string[] }> = [
  { what: 'summary', names: SUMMARY_SECTIONS },
  { what: 'channel bitmap', names: CHANNEL_BITS_SECTIONS },
];
const DERIVED_SECTIONS: readonly string[] = DERIVED_GROUPS.flatMap((g) => g.names);

/**
 * The sections of the layout before message rows (message-rows.ts): ids and contents as two
 * string columns. Such a snapshot is read into ordinary memory and its rows derived on load, in
 * shared memory (a copy of its text: ~0.1 s at 1M messages), so it keeps loading without being
 * published again.
 */
const TWO_COLUMN_SECTIONS: Readonly<Record<string, SectionType>> = {
  msgIdBytes: 'Uint8Array',
  msgIdOffsets: 'Uint32Array',
  msgContentBytes: 'Uint8Array',
  msgContentOffsets: 'Uint32Array',
};
const ROW_SECTIONS: readonly string[] = [
  'msgRowBytes',
  'msgRowOffsets',
  'msgRowStartBase',
  'msgRowStartDelta',
  'msgRowStartFar',
];

/**
 * The starts of the layout before block starts (block-starts.ts): one Uint32 a message, for the
 * message rows and for the token sequences. Such a snapshot is read into ordinary memory and its
 * starts encoded on load (a pass over each column, a few ms at 1M messages), so it keeps loading
 * without being published again.
 */
const WHOLE_STARTS: ReadonlyArray<{
  readonly whole: string;
  readonly names: readonly [string, string, string];
  readonly bytes: string;
  readonly what: string;
}> = [
  {
    whole: 'msgRowOffsets',
    names: ['msgRowStartBase', 'msgRowStartDelta', 'msgRowStartFar'],
    bytes: 'msgRowBytes',
    what: 'the message rows',
  },
  {
    whole: 'seqByteStart',
    names: ['seqStartBase', 'seqStartDelta', 'seqStartFar'],
    bytes: 'tokenSeqBytes',
    what: 'the token sequences',
  },
];
const WHOLE_START_SECTIONS: Readonly<Record<string, SectionType>> = Object.fromEntries(
  WHOLE_STARTS.map((g) => [g.whole, 'Uint32Array' as const]),
);

/**
 * The posting starts of the layout before starts in the entry words (post-starts.ts): a Uint16
 * distance an entry in a column of its own, bases per 64 entries, and entryNewestIn one word an
 * entry with NO_INBOUND at bit 31. Such a snapshot's starts are checked and encoded on load (a
 * few passes over the entries), so it keeps loading without being published again.
 */
const SEPARATE_POST_SECTIONS: Readonly<Record<string, SectionType>> = { entryPostOffset: 'Uint16Array' };
/**
 * The top lists of the layout before their offsets (top-lists.ts): whole entry positions, a Uint32
 * each. Such a snapshot's lists are checked and converted on load, so it keeps loading.
 */
const WHOLE_TOP_SECTIONS: Readonly<Record<string, SectionType>> = { topEntries: 'Uint32Array' };

/**
 * The sent times of the layout before seconds and milliseconds apart (sent-times.ts): epoch ms, a
 * Float64 each. Such a snapshot's times are checked and encoded on load, so it keeps loading.
 */
const FLOAT_SENT_SECTIONS: Readonly<Record<string, SectionType>> = { msgSentAt: 'Float64Array' };
/**
 * The layouts of the sent times a snapshot may have, exactly one of them whole: this build's
 * blocks (sent-times.ts), the three words a message before them (sent-times-words.ts), or epoch ms.
 * The two older ones are read into ordinary memory, checked, and encoded as blocks on load.
 */
const SENT_LAYOUTS: ReadonlyArray<readonly string[]> = [
  SENT_TIME_SECTIONS,
  Object.keys(WORD_SENT_SECTIONS),
  Object.keys(FLOAT_SENT_SECTIONS),
];
const OLDER_SENT_SECTIONS: Readonly<Record<string, SectionType>> = { ...WORD_SENT_SECTIONS, ...FLOAT_SENT_SECTIONS };

/** The previous layout's NO_INBOUND: the top bit of the word. */
const SEPARATE_NO_INBOUND = 0x80000000;

/** Whether a column's offsets (n + 1 of them) run from 0 up to its bytes' length, never down. */
function offsetsFit(offsets: Uint32Array, bytes: { readonly length: number }, n: number): boolean {
  if (offsets.length !== n + 1 || offsets[0] !== 0 || offsets[n] !== bytes.length) return false;
  for (let i = 0; i < n; i++) if (offsets[i + 1] < offsets[i]) return false;
  return true;
}

/** The summary sections of a snapshot written without them, in shared memory. */
function deriveSummaries(s: Record<string, Section>, messageCount: number): Record<string, Section> {
  const summaries = buildEntrySummaries(
    {
      messageCount,
      entryPostBase: s.entryPostBase as Int32Array,
      entryPostFar: s.entryPostFar as Uint32Array,
      entryCount: s.entryFlags.length,
      entryFlags: s.entryFlags as Uint16Array,
      entryNewestIn: s.entryNewestIn as Uint32Array,
      storedPostings: s.storedPostings as Uint32Array,
      msgCombo: s.msgCombo as Uint8Array,
      msgConversation: s.msgConversation as ConversationColumn,
      conversationCount: s.conversationIdOffsets.length - 1,
    },
    SUMMARY_MIN_DEFAULT,
  );
  return shareSections(Object.entries(summaries));
}

/**
 * Whether stored summaries have their shape: one minimum >= 1, ascending entry ids below the
 * entry count, SUMMARY_WIDTH values each (a query reads them without checks).
 */
function summariesFit(s: Record<string, Section>): boolean {
  const min = s.summaryMin,
    entries = s.summaryEntries,
    values = s.summaryValues;
  const entryCount = s.entryFlags.length;
  if (min.length !== 1 || min[0] < 1 || values.length !== entries.length * SUMMARY_WIDTH) return false;
  for (let i = 0; i < entries.length; i++) {
    if (entries[i] >= entryCount || (i > 0 && entries[i] <= entries[i - 1])) return false;
  }
  return true;
}

/** What a SnapshotDecoder is made for: see its constructor. */
export type DecodePurpose = 'serve' | 'export';

/** Format 2: each section copied once from the chunk bytes into its own SharedArrayBuffer. */
class SectionsDecoder {
  private readonly manifest: Manifest;
  private readonly what: string;
  /**
   * The contact records, when kept: an export gives them back; a server does not (it renders the
   * contactJsonBytes section). 20k objects a 1M load that all survived a few scavenges, and that
   * went on to every serving thread: without them RSS 3 s after ready went from 294-304 to
   * 292-295 MB (3 rounds alternated), V8's young generation at ready from 32 to 16 MB.
   */
  private readonly contacts: Contact[];
  private readonly keepContacts: boolean;
  private readonly sections = new Map<string, { bytes: Uint8Array; array: Section; filled: number }>();
  private contactsFilled = 0;
  private readonly seen: boolean[];

  /** byte length of each export section not kept: its parts are checked, not copied */
  private readonly skipped = new Map<string, number>();
  /** the toucher of the shared sections' pages (prefault.ts), while the chunks are copied in */
  private prefault: Prefault | null = null;

  constructor(manifest: Manifest, keepExport: boolean) {
    this.manifest = manifest;
    this.what = `organization ${manifest.organizationId} version ${manifest.version}`;
    this.keepContacts = keepExport;
    this.contacts = keepExport ? new Array(manifest.contacts) : [];
    this.seen = new Array(manifest.chunks.length).fill(false);
    const expected = expectedLayout();
    const names = new Set<string>();
    const shared: [string, SectionType, number][] = [];
    let total = 0;
    for (const c of manifest.chunks) total += c.length;
    // the layout before starts in the entry words: its entry words are re-encoded on load, so
    // they go in ordinary memory too (in the one shared buffer, they stayed for the index's life)
    const separatePosts = manifest.sections!.some((e) => Array.isArray(e) && e[0] === 'entryPostOffset');
    // the layout before conversations numbered by contact (conversations.ts): renumbered on load
    // from the messages' contacts (an export section), so its conversation columns and those go in
    // ordinary memory and are let go once renumbered
    const globalConversations = !manifest.sections!.some(
      (e) => Array.isArray(e) && e[0] === 'contactConversationStart',
    );
    const renumbered = (name: string): boolean =>
      globalConversations &&
      (name === 'msgConversation' || name === 'conversationIdBytes' || name === 'conversationIdOffsets');
    for (const entry of manifest.sections!) {
      const [name, type, length] = (Array.isArray(entry) ? entry : []) as [unknown, unknown, unknown];
      if (
        typeof name !== 'string' ||
        typeof type !== 'string' ||
        !Object.hasOwn(SECTION_TYPES, type) ||
        typeof length !== 'number' ||
        !Number.isSafeInteger(length) ||
        length < 0 ||
        names.has(name)
      ) {
        throw new Error(`snapshot: malformed manifest for ${this.what}`);
      }
      names.add(name);
      // entryContact's and topOffsets' width follows the contact count (contactColumnType): hold
      // the manifest to it. msgConversation's follows the most conversations of one contact: either
      // width, checked on load against contactConversationStart (32 bits in the layout before).
      const want =
        name === 'entryContact' || name === 'topOffsets'
          ? contactColumnType(manifest.contacts)
          : name === 'msgConversation'
            ? !globalConversations && type === 'Uint16Array'
              ? 'Uint16Array'
              : 'Uint32Array'
            : (expected.get(name) ??
              TWO_COLUMN_SECTIONS[name] ??
              WHOLE_START_SECTIONS[name] ??
              SEPARATE_POST_SECTIONS[name] ??
              WHOLE_TOP_SECTIONS[name] ??
              OLDER_SENT_SECTIONS[name]);
      const exportOnly = isExportSection(name);
      if (exportOnly ? type !== 'Uint32Array' : want !== type) {
        const known = exportOnly || want !== undefined;
        throw new Error(
          `snapshot: ${this.what} has ${known ? 'a differently typed' : 'an unknown'} section ${name} ` +
            `(another index layout); ${UPGRADE}`,
        );
      }
      const Ctor = SECTION_TYPES[type as SectionType];
      // A manifest cannot make us allocate more than its chunks could fill.
      if (length * Ctor.BYTES_PER_ELEMENT > total) throw new Error(`snapshot: malformed manifest for ${this.what}`);
      if (exportOnly && !keepExport && !(globalConversations && name === 'msgContact')) {
        this.skipped.set(name, length * Ctor.BYTES_PER_ELEMENT);
      } else if (
        exportOnly ||
        Object.hasOwn(TWO_COLUMN_SECTIONS, name) ||
        Object.hasOwn(WHOLE_START_SECTIONS, name) ||
        Object.hasOwn(SEPARATE_POST_SECTIONS, name) ||
        Object.hasOwn(WHOLE_TOP_SECTIONS, name) ||
        Object.hasOwn(OLDER_SENT_SECTIONS, name) ||
        (name === 'entryNewestIn' && separatePosts) ||
        renumbered(name)
      ) {
        // Export sections only serve finishData (msgContact also a renumbering), the two columns
        // only give the rows their bytes, whole or separate starts (and the words of the latter)
        // and whole top-list entries and older sent times are encoded, and the layout before's
        // conversation columns renumbered: ordinary memory, not shared, dropped once loaded.
        const array = new (Ctor as unknown as new (n: number) => Section)(length);
        this.sections.set(name, { bytes: new Uint8Array(array.buffer), array, filled: 0 });
      } else {
        shared.push([name, type as SectionType, length]);
      }
    }
    const sharedSections = allocateShared(shared);
    for (const [name, array] of Object.entries(sharedSections)) {
      this.sections.set(name, {
        bytes: new Uint8Array(array.buffer, array.byteOffset, array.byteLength),
        array,
        filled: 0,
      });
    }
    // the message rows, or the two columns they are derived from: one layout or the other, whole
    const twoColumns = Object.keys(TWO_COLUMN_SECTIONS).filter((name) => names.has(name)).length;
    if (twoColumns !== 0 && (twoColumns !== 4 || ROW_SECTIONS.some((name) => names.has(name))))
      throw new Error(
        `snapshot: ${this.what} has an incomplete or mixed set of message id and content sections (another index layout); ${UPGRADE}`,
      );
    // whole starts or their blocks: one layout or the other, not both
    for (const g of WHOLE_STARTS) {
      if (names.has(g.whole) && g.names.some((name) => names.has(name)))
        throw new Error(
          `snapshot: ${this.what} has both layouts of the starts of ${g.what} (another index layout); ${UPGRADE}`,
        );
    }
    // the sent times: one layout, whole (its sections all there), and no section of another
    const sentLayouts = SENT_LAYOUTS.filter((layout) => layout.some((name) => names.has(name)));
    if (sentLayouts.length > 1)
      throw new Error(`snapshot: ${this.what} has both layouts of the sent times (another index layout); ${UPGRADE}`);
    for (const name of sentLayouts[0] ?? []) {
      if (!names.has(name))
        throw new Error(`snapshot: ${this.what} has no section ${name} (another index layout); ${UPGRADE}`);
    }
    const wholeStarts = (name: string): boolean =>
      WHOLE_STARTS.some((g) => names.has(g.whole) && g.names.includes(name));
    for (const name of expected.keys()) {
      if (
        !names.has(name) &&
        !DERIVED_SECTIONS.includes(name) &&
        !(twoColumns === 4 && ROW_SECTIONS.includes(name)) &&
        !wholeStarts(name) &&
        !(name === 'contactConversationStart' && globalConversations) &&
        !(name === 'topOffsets' && names.has('topEntries')) &&
        !((SENT_TIME_SECTIONS as readonly string[]).includes(name) && sentLayouts.length === 1)
      )
        throw new Error(`snapshot: ${this.what} has no section ${name} (another index layout); ${UPGRADE}`);
    }
    if (names.has('topEntries') && names.has('topOffsets')) {
      throw new Error(`snapshot: ${this.what} has both layouts of the top lists (another index layout); ${UPGRADE}`);
    }
    if (globalConversations && !names.has('msgContact')) {
      throw new Error(
        `snapshot: ${this.what} has neither contactConversationStart nor msgContact to number its conversations by (another index layout); ${UPGRADE}`,
      );
    }
    // a group of derived sections comes all together (written by a layout with it) or not at all
    for (const group of DERIVED_GROUPS) {
      const derived = group.names.filter((name) => names.has(name)).length;
      if (derived !== 0 && derived !== group.names.length)
        throw new Error(
          `snapshot: ${this.what} has some ${group.what} sections but not all (another index layout); ${UPGRADE}`,
        );
    }
    // last, once nothing here can throw: a decoder never returned could not stop it
    const anyShared = Object.values(sharedSections)[0];
    if (anyShared !== undefined) this.prefault = prefaultShared(anyShared.buffer as SharedArrayBuffer);
  }

  private corrupt(detail: string): Error {
    return corruptSnapshot(this.manifest, detail);
  }

  /** Stops the page toucher: the load failed or is complete. */
  release(): void {
    this.prefault?.stop();
    this.prefault = null;
  }

  // (a chunk refused here fails the load: the store then calls SnapshotDecoder.abandon)
  add(index: number, chunk: Uint8Array): void {
    // a server's load steps over the contact records (it renders contactJsonBytes); an export decodes them
    const skipped: ContactsPart[] | undefined = this.keepContacts ? undefined : [];
    const decoded = verifiedParts<PartV2>(this.manifest, this.seen, index, chunk, (d) => this.corrupt(d), skipped);
    const bad = (): Error => this.corrupt(`chunk ${index}: malformed part`);
    for (const c of skipped ?? []) {
      if (c.start + c.rows > this.manifest.contacts) throw bad();
      this.contactsFilled += c.rows;
    }
    for (const p of decoded) {
      if (!Array.isArray(p)) throw bad();
      if (p[0] === 'c') {
        const [, start, rows] = p;
        if (
          !Array.isArray(rows) ||
          !Number.isSafeInteger(start) ||
          start < 0 ||
          start + rows.length > this.manifest.contacts
        )
          throw bad();
        // decoded only for an export (a server's load steps over them, above)
        const org = this.manifest.organizationId;
        for (let i = 0; i < rows.length; i++) {
          const [id, name, phone, email, avatar_url, source] = rows[i];
          this.contacts[start + i] = { id, organization_id: org, name, phone, email, avatar_url, source };
        }
        this.contactsFilled += rows.length;
      } else if (p[0] === 'a') {
        const [, name, offset, bytes] = p;
        const s = this.sections.get(name);
        const length = s !== undefined ? s.bytes.length : this.skipped.get(name);
        if (
          length === undefined ||
          !(bytes instanceof Uint8Array) ||
          !Number.isSafeInteger(offset) ||
          offset < 0 ||
          offset + bytes.length > length
        )
          throw bad();
        if (s === undefined) continue; // an export section this decoder does not keep
        // The one copy: from the chunk (msgpackr's view into it) into the section's own memory.
        copyInto(s.bytes, offset, bytes);
        s.filled += bytes.length;
      } else {
        throw bad();
      }
    }
  }

  /** A snapshot of the layout before rows: its rows in shared memory, its two columns let go. */
  private rowsFromTwoColumns(sections: Record<string, Section>): Record<string, Section> {
    const n = this.manifest.messages;
    const idBytes = sections.msgIdBytes as Uint8Array,
      idOffsets = sections.msgIdOffsets as Uint32Array,
      contentBytes = sections.msgContentBytes as Uint8Array,
      contentOffsets = sections.msgContentOffsets as Uint32Array;
    if (!offsetsFit(idOffsets, idBytes, n) || !offsetsFit(contentOffsets, contentBytes, n))
      throw this.corrupt('the message id or content sections disagree with the counts');
    for (const name of Object.keys(TWO_COLUMN_SECTIONS)) {
      delete sections[name];
      this.sections.delete(name);
    }
    let rows: Record<string, Section> = {};
    rowsOf(idBytes, idOffsets, contentBytes, contentOffsets, (length) => {
      rows = { ...allocateShared([['msgRowBytes', 'Uint8Array', length]]), msgRowOffsets: new Uint32Array(n + 1) };
      return { bytes: rows.msgRowBytes as Uint8Array, offsets: rows.msgRowOffsets as Uint32Array };
    });
    return rows;
  }

  /**
   * The block starts (block-starts.ts) of one column of `count` starts into `bytes`: encoded from
   * its whole starts (an older layout: checked, then let go) or checked as stored.
   */
  private blockStarts(sections: Record<string, Section>, g: (typeof WHOLE_STARTS)[number], count: number): void {
    const end = sections[g.bytes].length;
    const whole = sections[g.whole] as Uint32Array | undefined;
    const [base, delta, far] = g.names;
    if (whole !== undefined) {
      if (!offsetsFit(whole, sections[g.bytes] as Uint8Array, count - 1))
        throw this.corrupt(`${g.what} disagree with the counts`);
      const x = encodeBlockStarts(whole);
      Object.assign(
        sections,
        shareSections([
          [base, x.base],
          [delta, x.delta],
          [far, x.far],
        ]),
      );
      delete sections[g.whole];
      this.sections.delete(g.whole);
      return;
    }
    const x = {
      base: sections[base] as Uint32Array,
      delta: sections[delta] as Uint16Array,
      far: sections[far] as Uint32Array,
    };
    if (!blockStartsFit(x, count, end)) throw this.corrupt(`${g.what} disagree with the counts`);
  }

  /**
   * The entries' posting starts (post-starts.ts): encoded into the entry words from the layout
   * before (its distances in a column of their own: checked, then let go) or checked as stored.
   */
  private postStarts(sections: Record<string, Section>, n: number): void {
    const entries = sections.entryFlags.length;
    const postings = sections.storedPostings.length;
    const offsets = sections.entryPostOffset as Uint16Array | undefined;
    const bad = (): Error => this.corrupt('the posting starts disagree with the entries');
    if (offsets === undefined) {
      const x = {
        messageCount: n,
        entryPostBase: sections.entryPostBase as Int32Array,
        entryPostFar: sections.entryPostFar as Uint32Array,
        entryNewestIn: sections.entryNewestIn as Uint32Array,
      };
      if (!postStartsFit(x, entries, postings)) throw bad();
      return;
    }
    const starts = decodeSeparatePostStarts(
      sections.entryPostBase as Int32Array,
      offsets,
      sections.entryPostFar as Uint32Array,
      entries + 1,
    );
    const old = sections.entryNewestIn as Uint32Array;
    if (starts === null || old.length !== entries || !offsetsFit(starts, { length: postings }, entries)) throw bad();
    const none = noInbound(n);
    const words = allocateShared([['entryNewestIn', 'Uint32Array', entries + 1]]).entryNewestIn as Uint32Array;
    for (let e = 0; e < entries; e++) {
      const w = old[e];
      const r = w & ~SEPARATE_NO_INBOUND;
      // a rank or ordinal of this organization: anything else would read outside its columns
      if (r >= n) throw bad();
      words[e] = w >= SEPARATE_NO_INBOUND ? none | r : r;
    }
    words[entries] = rankMask(n);
    const x = encodePostStarts(starts, words, n);
    Object.assign(
      sections,
      shareSections([
        ['entryPostBase', x.entryPostBase],
        ['entryPostFar', x.entryPostFar],
      ]),
      { entryNewestIn: words },
    );
    delete sections.entryPostOffset;
    this.sections.delete('entryPostOffset');
    this.sections.delete('entryNewestIn');
  }

  /**
   * The conversations numbered by contact (conversations.ts): renumbered from the layout before
   * (its columns checked, then let go; its contacts from the export section msgContact) or checked
   * as stored.
   */
  private conversations(sections: Record<string, Section>, n: number): void {
    const contacts = this.manifest.contacts;
    const bad = (): Error => this.corrupt('the conversation sections disagree with the counts');
    const idBytes = sections.conversationIdBytes as Uint8Array,
      idOffsets = sections.conversationIdOffsets as Uint32Array;
    const count = idOffsets.length - 1;
    if (count < 0 || !offsetsFit(idOffsets, idBytes, count)) throw bad();
    if (sections.contactConversationStart !== undefined) {
      const start = sections.contactConversationStart as Uint32Array;
      if (!conversationsFit(sections.msgConversation as Uint16Array | Uint32Array, start, n, count, contacts))
        throw bad();
      return;
    }
    const contactOf = this.sections.get('msgContact')?.array as Uint32Array;
    const x = numberByContact(sections.msgConversation as Uint32Array, contactOf, count, contacts);
    if (x === null) throw bad();
    const global = sections.msgConversation as Uint32Array;
    const out = allocateShared([
      ['msgConversation', narrowColumnType(x.most), n],
      ['contactConversationStart', 'Uint32Array', contacts + 1],
      ['conversationIdOffsets', 'Uint32Array', count + 1],
      ['conversationIdBytes', 'Uint8Array', idBytes.length],
    ]);
    const local = out.msgConversation as Uint16Array | Uint32Array;
    for (let o = 0; o < n; o++) local[o] = x.number[global[o]];
    (out.contactConversationStart as Uint32Array).set(x.start);
    // the ids in their new order: each one's length first, then the bytes where its offset says
    const offsets = out.conversationIdOffsets as Uint32Array,
      bytes = out.conversationIdBytes as Uint8Array;
    for (let g = 0; g < count; g++) offsets[x.ordinal[g] + 1] = idOffsets[g + 1] - idOffsets[g];
    for (let k = 0; k < count; k++) offsets[k + 1] += offsets[k];
    // (a byte loop: a subarray a conversation grew the young generation to 16 MB semi-spaces, which
    // a server then kept: RSS +20 MB at 1M messages)
    for (let g = 0; g < count; g++) {
      let to = offsets[x.ordinal[g]];
      for (let k = idOffsets[g], end = idOffsets[g + 1]; k < end; k++) bytes[to++] = idBytes[k];
    }
    Object.assign(sections, out);
    for (const name of ['msgConversation', 'conversationIdBytes', 'conversationIdOffsets']) this.sections.delete(name);
    // (read only for this, unless an export keeps it)
    if (!this.keepContacts) this.sections.delete('msgContact');
  }

  /**
   * The top lists' offsets (top-lists.ts): converted from the layout before (whole entry
   * positions: checked, then let go) or checked as stored.
   */
  private topOffsets(sections: Record<string, Section>): void {
    const x = {
      entryStart: sections.entryStart as Uint32Array,
      topSlot: sections.topSlot as Int32Array,
      topStart: sections.topStart as Uint32Array,
      topCount: sections.topCount as Uint32Array,
    };
    const bad = (): Error => this.corrupt('the top list sections disagree with the entries');
    const whole = sections.topEntries as Uint32Array | undefined;
    if (whole === undefined) {
      if (!topOffsetsFit(x, sections.topOffsets as ContactColumn)) throw bad();
      return;
    }
    const out = contactColumn(this.manifest.contacts, whole.length);
    if (!offsetsOfEntries(x, whole, out)) throw bad();
    Object.assign(sections, shareSections([['topOffsets', out]]));
    delete sections.topEntries;
    this.sections.delete('topEntries');
  }

  /**
   * The sent times (sent-times.ts): encoded from an older layout (three words a message, or epoch
   * ms a Float64 each: checked, then let go) or checked as stored.
   */
  private sentTimes(sections: Record<string, Section>, n: number): void {
    const bad = (): Error => this.corrupt('the sent times disagree with the counts or go up');
    const older = SENT_LAYOUTS.slice(1).find((layout) => sections[layout[0]] !== undefined);
    if (older !== undefined) {
      const ms =
        sections.msgSentAt !== undefined
          ? (sections.msgSentAt as Float64Array)
          : decodeWordSentTimes(sections as unknown as WordSentTimes, n);
      if (ms === null || ms.length !== n) throw bad();
      let times: SentTimes;
      try {
        times = encodeSentTimes(ms);
      } catch {
        throw bad(); // not an integer instant
      }
      Object.assign(sections, shareSections(Object.entries(times)));
      for (const name of older) {
        delete sections[name];
        this.sections.delete(name);
      }
    }
    if (!sentTimesFit(sections as unknown as SentTimes, n)) throw bad();
  }

  finish(withSourceOrder: boolean): FlatIndex {
    this.release(); // every page is written by now
    const m = this.manifest;
    if (this.seen.some((s) => !s)) throw this.corrupt('missing chunks');
    if (this.contactsFilled !== m.contacts) throw this.corrupt('contact count mismatch');
    const sections: Record<string, Section> = {};
    for (const [name, s] of this.sections) {
      if (s.filled !== s.bytes.length) throw this.corrupt(`section ${name} incomplete`);
      if (!isExportSection(name) || withSourceOrder) sections[name] = s.array;
    }
    const n = m.messages;
    // Cheap shape checks, so a bad snapshot fails here and not inside a query.
    const off = sections.tokenOffsets as Uint32Array;
    if (off.length < 1 || off[off.length - 1] !== sections.tokenBytes.length) {
      throw this.corrupt('sections disagree with the counts');
    }
    const disagree = sectionsDisagree(sections, n, m.contacts);
    if (disagree !== null) throw this.corrupt(disagree);
    if (sections.msgRowBytes === undefined) Object.assign(sections, this.rowsFromTwoColumns(sections));
    for (const g of WHOLE_STARTS) this.blockStarts(sections, g, n + 1);
    this.postStarts(sections, n);
    this.conversations(sections, n);
    this.topOffsets(sections);
    this.sentTimes(sections, n);
    // the TIED bits (layout.ts) from the times themselves, whatever the snapshot's bytes say
    markTies(sections as unknown as SentTimes, sections.msgCombo as Uint8Array);
    if (sections.summaryMin === undefined) Object.assign(sections, deriveSummaries(sections, n));
    else if (!summariesFit(sections)) throw this.corrupt('the summary sections disagree with the entries');
    const entryStart = sections.entryStart as Uint32Array,
      topSlot = sections.topSlot as Int32Array,
      slots = sections.topCount.length / TOP_MODES;
    if (!Number.isInteger(slots)) throw this.corrupt('the top list sections disagree with each other');
    if (sections.inboundChannelBits === undefined)
      Object.assign(
        sections,
        shareSections(Object.entries(buildChannelBits(entryStart, sections.entryFlags as Uint16Array, topSlot, slots))),
      );
    else if (!channelBitsFit(sections as unknown as ChannelBits, entryStart, topSlot, slots))
      throw this.corrupt('the channel bitmap sections disagree with the top lists');
    return {
      organizationId: ownString(m.organizationId),
      messageCount: n,
      contactCount: m.contacts,
      pairMinFrequency: m.pairMinFrequency!,
      contacts: this.contacts,
      sections,
      ...(typeof m.digest === 'string' ? { digest: ownString(m.digest) } : {}),
    };
  }
}

/**
 * Format 1: rebuilds OrgData from a manifest and its chunks, added in any order. Every chunk is
 * checked against its CRC32; decoded values are copied into fresh arrays (msgpackr hands out
 * views into the chunk, which would keep every chunk alive).
 */
class RecordColumnsDecoder {
  private readonly manifest: Manifest;
  private readonly contacts: Contact[];
  private readonly strings: Record<StringColumn, string[]>;
  private readonly bytes: Record<ByteColumn, Uint8Array>;
  // Filled counts per column, to prove at the end that every slot was written once.
  private readonly filled = new Map<string, number>();
  private readonly seen: boolean[];

  constructor(manifest: Manifest) {
    this.manifest = manifest;
    const n = manifest.messages;
    this.contacts = new Array(manifest.contacts);
    this.strings = { id: new Array(n), conversationId: new Array(n), content: new Array(n) };
    this.bytes = {
      contact: new Uint8Array(n * 4),
      channel: new Uint8Array(n),
      direction: new Uint8Array(n),
      sentAt: new Uint8Array(n * 8),
    };
    this.seen = new Array(manifest.chunks.length).fill(false);
  }

  private corrupt(detail: string): Error {
    return corruptSnapshot(this.manifest, detail);
  }

  private count(key: string, k: number): void {
    this.filled.set(key, (this.filled.get(key) ?? 0) + k);
  }

  /** Verifies and decodes chunk `index`. */
  add(index: number, chunk: Uint8Array): void {
    const decoded = verifiedParts<Part>(this.manifest, this.seen, index, chunk, (d) => this.corrupt(d));
    for (const p of decoded) this.addPart(p, index);
  }

  private addPart(p: Part, index: number): void {
    const bad = (): Error => this.corrupt(`chunk ${index}: malformed part`);
    if (!Array.isArray(p)) throw bad();
    if (p[0] === 'c') {
      const [, start, rows] = p;
      if (!Array.isArray(rows) || start + rows.length > this.contacts.length) throw bad();
      const org = this.manifest.organizationId;
      for (let i = 0; i < rows.length; i++) {
        const [id, name, phone, email, avatar_url, source] = rows[i];
        this.contacts[start + i] = { id, organization_id: org, name, phone, email, avatar_url, source };
      }
      this.count('c', rows.length);
    } else if (p[0] === 's') {
      const [, col, start, values] = p;
      const target = this.strings[col];
      if (target === undefined || !Array.isArray(values) || start + values.length > target.length) throw bad();
      for (let i = 0; i < values.length; i++) target[start + i] = values[i];
      this.count(col, values.length);
    } else if (p[0] === 'b') {
      const [, col, offset, bytes] = p;
      const target = this.bytes[col];
      if (target === undefined || !(bytes instanceof Uint8Array) || offset + bytes.length > target.length) throw bad();
      target.set(bytes, offset);
      this.count(col, bytes.length);
    } else {
      throw bad();
    }
  }

  /** The OrgData, once every chunk was added; throws when anything is missing or out of range. */
  finish(): OrgData {
    const m = this.manifest,
      n = m.messages;
    if (this.seen.some((s) => !s)) throw this.corrupt('missing chunks');
    if ((this.filled.get('c') ?? 0) !== m.contacts) throw this.corrupt('contact count mismatch');
    for (const col of STRING_COLUMNS)
      if ((this.filled.get(col) ?? 0) !== n) throw this.corrupt(`column ${col} incomplete`);
    for (const col of BYTE_COLUMNS)
      if ((this.filled.get(col) ?? 0) !== n * BYTES_PER[col]) throw this.corrupt(`column ${col} incomplete`);
    const contact = new Uint32Array(this.bytes.contact.buffer);
    const channel = this.bytes.channel,
      direction = this.bytes.direction;
    const sentAt = new Float64Array(this.bytes.sentAt.buffer);
    // Cheap range checks, so a bad snapshot fails here and not inside a query.
    for (let i = 0; i < n; i++) {
      if (
        contact[i] >= m.contacts ||
        channel[i] >= CHANNELS.length ||
        direction[i] >= DIRECTIONS.length ||
        !Number.isFinite(sentAt[i])
      ) {
        throw this.corrupt(`message ${i} out of range`);
      }
    }
    return {
      organizationId: ownString(m.organizationId),
      contacts: this.contacts,
      messages: {
        count: n,
        id: this.strings.id,
        contact,
        conversationId: this.strings.conversationId,
        channel,
        direction,
        content: this.strings.content,
        sentAt,
      },
    };
  }
}
