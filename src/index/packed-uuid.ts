/**
 * Message ids in UUID form, kept in 17 bytes instead of 36: many CRMs export their ids as UUIDs,
 * and at 1M such messages their text took 36 MB of the index (measured with
 * `npm run gen -- --ids uuid`; bench/RESULTS.md, session 23). Conversation ids are not packed:
 * each is kept once for all its messages (2 MB of UUIDs at 1M), and a packed id costs a rendered
 * message ~20 ns more than a copied one.
 *
 * The index keeps every id JSON-escaped (what a response copies), and escaped JSON never holds a
 * byte below 0x20, so a stored id of PACKED_LENGTH bytes whose first byte is below 0x20 cannot be
 * text: it is [case][16 bytes of the UUID], case 0 for lower-case hex digits, 1 for upper case.
 * Only ids whose every letter has one case are packed, so rendering gives back the very string
 * imported; others (mixed case, braces, no dashes) stay text. Snapshots written before packing
 * hold only text, and read the same.
 */

/** Bytes of a packed id: its case byte and the UUID's 16 bytes. */
export const PACKED_LENGTH = 17;

/** Characters of a UUID's text form (8-4-4-4-12). */
export const UUID_TEXT_LENGTH = 36;

/** What a hex digit's ASCII code is worth, or -1; the case of its letter in bit 8 (0x100: upper). */
const DIGIT = new Int16Array(256).fill(-1);
for (let d = 0; d < 10; d++) DIGIT[0x30 + d] = d;
for (let d = 0; d < 6; d++) {
  DIGIT[0x61 + d] = 10 + d;
  DIGIT[0x41 + d] = 0x100 | (10 + d);
}

/** Whether text position i (0-35) of a UUID holds a dash. */
function dashAt(i: number): boolean {
  return i === 8 || i === 13 || i === 18 || i === 23;
}

/**
 * The case of bytes[from, to) if they are a UUID's text form to pack: 0 lower (or no letter at
 * all), 1 upper; -1 when they are not one, or mix both cases.
 */
export function uuidCase(bytes: Uint8Array, from: number, to: number): number {
  if (to - from !== UUID_TEXT_LENGTH) return -1;
  let lower = false,
    upper = false;
  for (let i = 0; i < UUID_TEXT_LENGTH; i++) {
    const b = bytes[from + i];
    if (dashAt(i)) {
      if (b !== 0x2d) return -1;
      continue;
    }
    const d = DIGIT[b];
    if (d < 0) return -1;
    if (d >= 0x100) upper = true;
    else if (d >= 10) lower = true;
  }
  if (lower && upper) return -1;
  return upper ? 1 : 0;
}

/** Writes the packed form of the UUID text at bytes[from, from + 36) (of case `letterCase`) at out[at]; returns its end. */
export function packUuid(bytes: Uint8Array, from: number, letterCase: number, out: Uint8Array, at: number): number {
  out[at] = letterCase;
  let o = at + 1;
  for (let i = 0; i < UUID_TEXT_LENGTH; ) {
    if (dashAt(i)) {
      i++;
      continue;
    }
    out[o++] = ((DIGIT[bytes[from + i]] & 0xf) << 4) | (DIGIT[bytes[from + i + 1]] & 0xf);
    i += 2;
  }
  return o;
}

/** Whether the stored id bytes[at, at + length) are packed (see the top). */
export function isPacked(bytes: Uint8Array, at: number, length: number): boolean {
  return length === PACKED_LENGTH && bytes[at] < 0x20;
}

/**
 * Two ASCII hex digits a byte, as one little-endian 16-bit value: lower case at [byte], upper
 * case at [256 + byte] (a packed id's case byte times 256).
 */
export const HEX_PAIRS = new Uint16Array(512);
for (let b = 0; b < 512; b++) {
  const a = b < 256 ? 0x61 : 0x41;
  const digit = (n: number) => (n < 10 ? 0x30 + n : a + n - 10);
  HEX_PAIRS[b] = digit((b & 255) >>> 4) | (digit(b & 15) << 8);
}

/** The text of the packed id at bytes[at, at + 17) (for tools and tests; responses write it with BodyWriter.uuid). */
export function unpackUuid(bytes: Uint8Array, at: number): string {
  const c = (bytes[at] & 1) << 8;
  let s = '';
  for (let k = 0; k < 16; k++) {
    if (k === 4 || k === 6 || k === 8 || k === 10) s += '-';
    const p = HEX_PAIRS[c | bytes[at + 1 + k]];
    s += String.fromCharCode(p & 0xff, p >>> 8);
  }
  return s;
}
