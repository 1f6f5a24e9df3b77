/**
 * Streams an NDJSON file line by line over raw bytes, never holding more than one read block and
 * the current line. Lines end at LF (a CR before it is dropped). Every line is checked to be valid
 * UTF-8: a decoder would otherwise turn bad bytes into U+FFFD silently and import altered text.
 */
import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';

export interface Line {
  /** 1-based, counting blank lines too, as an editor shows them */
  number: number;
  /** the line decoded as UTF-8 (invalid sequences replaced by U+FFFD when `invalidUtf8` is set) */
  text: string;
  /** the line's raw bytes, present only when they are not valid UTF-8 */
  invalidUtf8?: Buffer;
}

/**
 * Part of a file: bytes [start, end), where `start` is 0 or just after a line feed. Line numbers
 * count from 1 within it; `onLines` receives how many lines it held (blank ones too) once read.
 */
export interface LineRange {
  start: number;
  end?: number;
  onLines?: (lines: number) => void;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The longest line read, in bytes. A longer one is refused before it is held whole: a 1 GB line
 * without a newline was read into memory (2.2 GB) and failed on the engine's string limit with no
 * file or line; a 300 MB message imported, and each search that found it answered 300 MB.
 */
export const MAX_LINE_BYTES = 16 << 20;
/** What a line may hold beyond MAX_LINE_BYTES before emit strips it: a CR, and a BOM on line 1. */
const ENDS = 4;

/** A line longer than MAX_LINE_BYTES: `line` is its number within the range read. */
export class LineTooLong extends Error {
  constructor(readonly line: number) {
    super(`longer than ${MAX_LINE_BYTES >> 20} MiB (${MAX_LINE_BYTES} bytes): a line holds one record`);
  }
}

/**
 * Yields the non-blank lines of `file`, in batches: the lines that end in one read block (1 MiB).
 * A UTF-8 BOM is dropped, CRLF and LF both end a line. `onBytes` receives the byte count of every
 * block read, for progress. Batches, not single lines: an async generator's yield is a promise
 * and a microtask, and two of them a line cost ~0.6 s of a 1M-line import.
 */
export async function* readLines(
  file: string,
  onBytes?: (n: number) => void,
  range?: LineRange,
): AsyncGenerator<Line[]> {
  const fromByte = range?.start ?? 0;
  if (range?.end !== undefined && range.end <= fromByte) {
    // an empty range (an empty file's whole): createReadStream reads an end before the start as an error
    range.onLines?.(0);
    return;
  }
  const stream = createReadStream(file, {
    highWaterMark: 1 << 20,
    start: fromByte,
    end: range?.end === undefined ? undefined : range.end - 1,
  });
  let number = 0;
  // Bytes of the line begun in earlier blocks and not ended yet.
  let pending: Buffer[] = [];
  let pendingSize = 0;

  let batch: Line[] = [];
  function emit(bytes: Buffer): void {
    number++;
    let b = bytes;
    if (b.length > 0 && b[b.length - 1] === CR) b = b.subarray(0, b.length - 1);
    if (number === 1 && fromByte === 0 && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf)
      b = b.subarray(3);
    // the limit is the record's: its CR and a BOM are not counted (a CRLF file's line of exactly
    // 16 MiB was refused where the LF file's was taken: an audit)
    if (b.length > MAX_LINE_BYTES) throw new LineTooLong(number);
    if (b.length === 0) return;
    const text = b.toString('utf8');
    if (isBlank(text)) return;
    if (!isUtf8(b)) batch.push({ number, text, invalidUtf8: Buffer.from(b) });
    else batch.push({ number, text });
  }

  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      onBytes?.(chunk.length);
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(LF, start);
        if (nl < 0) break;
        if (pendingSize + nl - start > MAX_LINE_BYTES + ENDS) throw new LineTooLong(number + 1);
        let line = chunk.subarray(start, nl);
        if (pendingSize > 0) {
          line = Buffer.concat([...pending, line], pendingSize + line.length);
          pending = [];
          pendingSize = 0;
        }
        emit(line);
        start = nl + 1;
      }
      if (start < chunk.length) {
        if (pendingSize + chunk.length - start > MAX_LINE_BYTES + ENDS) throw new LineTooLong(number + 1);
        // A copy: the read block must not stay alive for the sake of a line's tail.
        const rest = Buffer.from(chunk.subarray(start));
        pending.push(rest);
        pendingSize += rest.length;
      }
      if (batch.length > 0) {
        yield batch;
        batch = [];
      }
    }
    if (pendingSize > 0) emit(Buffer.concat(pending, pendingSize));
    if (batch.length > 0) yield batch;
    range?.onLines?.(number);
  } finally {
    stream.destroy();
  }
}

/**
 * A line of white space only (CONTRACT 10: JavaScript's `\s`, what trim() removes). The first
 * character tells most lines apart without a trim: \t \v \f \r (9-13), space, NBSP, BOM, or
 * one of the white spaces above U+1000. (\v and \f were missing: such a line failed as JSON.)
 */
function isBlank(text: string): boolean {
  const c = text.charCodeAt(0);
  return ((c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0xfeff || c > 0x1000) && text.trim() === '';
}

/** The first invalid UTF-8 sequence of `b`: its offset and length in bytes, or null when `b` is valid. */
export function firstInvalidUtf8(b: Uint8Array): { at: number; length: number } | null {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) need = 2;
    else if (c >= 0xf0 && c <= 0xf4) need = 3;
    else return { at: i, length: 1 };
    // Second-byte ranges that exclude overlong forms, surrogates and code points above U+10FFFF.
    const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
    const c1 = b[i + 1];
    if (i + 1 >= n || c1 < lo || c1 > hi) return { at: i, length: 1 };
    for (let j = 2; j <= need; j++) {
      if (i + j >= n || (b[i + j] & 0xc0) !== 0x80) return { at: i, length: j };
    }
    i += need + 1;
  }
  return null;
}
