/**
 * A message's id and content, JSON-escaped UTF-8, kept side by side in one byte column
 * (msgRowBytes, bounds from rowStart): a rendered message reads one offset and starts copying
 * from one line of memory, where two columns cost two offset reads and two places in memory.
 * Measured through HTTP on the six-class mix (1M messages, one server thread, 6 rounds alternated
 * with the two columns): 7,545 -> 7,857 requests/s (+4%); and 2.8 MiB less at 1M (one offset
 * column of 4 bytes a message gone, a prefix of 1 byte come).
 *
 * Row o, from rowStart(o) to rowStart(o + 1):
 *   [id length: 1 byte, or LONG_ID then 4 bytes little-endian] [id bytes] [content bytes]
 */
import { type BlockStarts, decodeBlockStarts, nextStart, startAt } from './block-starts.js';

/** The three arrays of the rows' starts (block-starts.ts); an OrgIndex has them. */
export interface RowStarts {
  readonly msgRowStartBase: Uint32Array;
  readonly msgRowStartDelta: Uint16Array;
  readonly msgRowStartFar: Uint32Array;
}

/** The names a RowStarts gives the arrays of an encoded column. */
export function rowStartsOf(x: BlockStarts): RowStarts {
  return { msgRowStartBase: x.base, msgRowStartDelta: x.delta, msgRowStartFar: x.far };
}

/** Every row's start and the last row's end, whole (n + 1 values for n messages): tools and tests. */
export function rowOffsetsOf(x: RowStarts, messages: number): Uint32Array {
  return decodeBlockStarts({ base: x.msgRowStartBase, delta: x.msgRowStartDelta, far: x.msgRowStartFar }, messages + 1);
}

/** Where row o starts in msgRowBytes (o up to the message count: the end of the last row). */
export function rowStart(x: RowStarts, o: number): number {
  return startAt(x.msgRowStartBase, x.msgRowStartDelta, x.msgRowStartFar, o);
}

/** Where row o ends (row o + 1 starts), given where it starts (`start`, rowStart's). */
export function rowEnd(x: RowStarts, o: number, start: number): number {
  return nextStart(x.msgRowStartBase, x.msgRowStartDelta, x.msgRowStartFar, o, start);
}

/** First byte of a row whose id is LONG_ID bytes or more: the length follows in 4 bytes. */
export const LONG_ID = 0xff;

/** Bytes of the length prefix of an id of `idLength` bytes. */
export function prefixLength(idLength: number): number {
  return idLength < LONG_ID ? 1 : 5;
}

/** Writes the length prefix of an id of `idLength` bytes at rows[at]; returns where the id starts. */
export function writePrefix(rows: Uint8Array, at: number, idLength: number): number {
  if (idLength < LONG_ID) {
    rows[at] = idLength;
    return at + 1;
  }
  rows[at] = LONG_ID;
  rows[at + 1] = idLength & 0xff;
  rows[at + 2] = (idLength >>> 8) & 0xff;
  rows[at + 3] = (idLength >>> 16) & 0xff;
  rows[at + 4] = idLength >>> 24;
  return at + 5;
}

/** Where the id of the row starting at `at` ends and its content starts. */
export function contentStart(rows: Uint8Array, at: number): number {
  const first = rows[at];
  if (first !== LONG_ID) return at + 1 + first;
  const length = (rows[at + 1] | (rows[at + 2] << 8) | (rows[at + 3] << 16) | (rows[at + 4] << 24)) >>> 0;
  return at + 5 + length;
}

/** Where the id of the row starting at `at` starts (after its length prefix). */
export function idStart(rows: Uint8Array, at: number): number {
  return at + (rows[at] === LONG_ID ? 5 : 1);
}

/**
 * Bytes of the rows of messages whose ids end at idOffsets (n + 1 of them, in any message order)
 * and whose contents take contentBytes in all; throws past what Uint32 offsets can hold.
 */
export function rowsLength(idOffsets: Uint32Array, contentBytes: number): number {
  const n = idOffsets.length - 1;
  let length = idOffsets[n] - idOffsets[0] + contentBytes;
  for (let i = 0; i < n; i++) length += prefixLength(idOffsets[i + 1] - idOffsets[i]);
  if (length > 0xffffffff)
    throw new Error(`index: ${length} bytes of message ids and contents in one organization; at most 2^32 - 1`);
  return length;
}

/** The message text of every row (their contents' bytes, the ids and prefixes left out). */
export function contentBytesOf(rows: Uint8Array, offsets: Uint32Array): number {
  let total = 0;
  for (let o = 0; o + 1 < offsets.length; o++) total += offsets[o + 1] - contentStart(rows, offsets[o]);
  return total;
}

/**
 * The rows of messages whose ids and contents are two string columns (bytes, offsets), message o
 * of both in row o: how a snapshot of the layout before rows is read.
 */
export function rowsOf(
  idBytes: Uint8Array,
  idOffsets: Uint32Array,
  contentBytes: Uint8Array,
  contentOffsets: Uint32Array,
  allocate: (length: number) => { bytes: Uint8Array; offsets: Uint32Array },
): { bytes: Uint8Array; offsets: Uint32Array } {
  const n = idOffsets.length - 1;
  const out = allocate(rowsLength(idOffsets, contentBytes.length));
  let at = 0;
  for (let o = 0; o < n; o++) {
    out.offsets[o] = at;
    const idFrom = idOffsets[o],
      idTo = idOffsets[o + 1];
    at = writePrefix(out.bytes, at, idTo - idFrom);
    out.bytes.set(idBytes.subarray(idFrom, idTo), at);
    at += idTo - idFrom;
    const from = contentOffsets[o],
      to = contentOffsets[o + 1];
    out.bytes.set(contentBytes.subarray(from, to), at);
    at += to - from;
  }
  out.offsets[n] = at;
  return out;
}
