/**
 * Walking msgpack values without decoding them: where a value ends, and the shape of a snapshot's
 * contacts part, so a server's load steps over the contact records it never uses (it renders the
 * contactJsonBytes section). Decoded, they were ~100k strings and 20k arrays a 1M load on the
 * thread that then serves: V8's young generation grew to its 16 MB maximum at start and held it
 * until the memory reducer ran, seconds after ready (bench/RESULTS.md, session 28).
 *
 * Only the msgpack of the spec (what msgpackr writes with useRecords: false): fixed and sized
 * ints, floats, nil, booleans, str, bin, ext, arrays and maps. Byte 0xc1 (never used) and any
 * value cut by the end of the buffer throw a RangeError: the caller reports a corrupt chunk.
 */

function need(b: Uint8Array, at: number, n: number): void {
  if (at + n > b.length) throw new RangeError(`msgpack value cut at byte ${b.length}`);
}

function be16(b: Uint8Array, at: number): number {
  need(b, at, 2);
  return (b[at] << 8) | b[at + 1];
}

function be32(b: Uint8Array, at: number): number {
  need(b, at, 4);
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

/**
 * An array or map claiming more elements than `maxItems` (or than the bytes left) in skipValue:
 * a snapshot's parts never hold more than its contacts or messages, and a chunk that claims 400M
 * of them (its CRC right) made the decoder allocate until V8 aborted the process (a review).
 */
function claim(n: number, maxItems: number, b: Uint8Array, at: number): number {
  if (n > maxItems || n > b.length - at)
    throw new RangeError(`msgpack array or map of ${n} elements at byte ${at}: more than the part can hold`);
  return n;
}

/**
 * Where the msgpack value starting at byte `at` of `b` ends (one past its last byte); an array
 * or map of more than `maxItems` elements throws (claim).
 */
export function skipValue(b: Uint8Array, at: number, maxItems = Number.MAX_SAFE_INTEGER): number {
  // values still to step over: an array or map adds its elements (a map two a pair)
  let pending = 1;
  while (pending > 0) {
    pending--;
    need(b, at, 1);
    const t = b[at++];
    if (t <= 0x7f || t >= 0xe0) continue; // positive or negative fixint
    if (t <= 0x8f) {
      pending += 2 * (t & 0x0f); // fixmap
      continue;
    }
    if (t <= 0x9f) {
      pending += t & 0x0f; // fixarray
      continue;
    }
    if (t <= 0xbf) {
      at += t & 0x1f; // fixstr
      need(b, at, 0);
      continue;
    }
    switch (t) {
      case 0xc0: // nil
      case 0xc2: // false
      case 0xc3: // true
        break;
      case 0xc4: // bin 8
      case 0xd9: // str 8
        need(b, at, 1);
        at += 1 + b[at];
        break;
      case 0xc5: // bin 16
      case 0xda: // str 16
        at += 2 + be16(b, at);
        break;
      case 0xc6: // bin 32
      case 0xdb: // str 32
        at += 4 + be32(b, at);
        break;
      case 0xc7: // ext 8: length, type, data
        need(b, at, 1);
        at += 2 + b[at];
        break;
      case 0xc8: // ext 16
        at += 3 + be16(b, at);
        break;
      case 0xc9: // ext 32
        at += 5 + be32(b, at);
        break;
      case 0xca: // float 32
        at += 4;
        break;
      case 0xcb: // float 64
        at += 8;
        break;
      case 0xcc: // uint 8
      case 0xd0: // int 8
        at += 1;
        break;
      case 0xcd: // uint 16
      case 0xd1: // int 16
        at += 2;
        break;
      case 0xce: // uint 32
      case 0xd2: // int 32
        at += 4;
        break;
      case 0xcf: // uint 64
      case 0xd3: // int 64
        at += 8;
        break;
      case 0xd4: // fixext 1, 2, 4, 8, 16: type, data
        at += 2;
        break;
      case 0xd5:
        at += 3;
        break;
      case 0xd6:
        at += 5;
        break;
      case 0xd7:
        at += 9;
        break;
      case 0xd8:
        at += 17;
        break;
      case 0xdc: // array 16
        pending += claim(be16(b, at), maxItems, b, at);
        at += 2;
        break;
      case 0xdd: // array 32
        pending += claim(be32(b, at), maxItems, b, at);
        at += 4;
        break;
      case 0xde: // map 16
        pending += 2 * claim(be16(b, at), maxItems, b, at);
        at += 2;
        break;
      case 0xdf: // map 32
        pending += 2 * claim(be32(b, at), maxItems, b, at);
        at += 4;
        break;
      default: // 0xc1: never used
        throw new RangeError(`msgpack byte 0x${t.toString(16)} at ${at - 1} starts no value`);
    }
    need(b, at, 0);
  }
  return at;
}

/** A non-negative integer encoded at `at` (fixint or uint 8-32), its end; null for any other value. */
function uintAt(b: Uint8Array, at: number): { value: number; end: number } | null {
  need(b, at, 1);
  const t = b[at];
  if (t <= 0x7f) return { value: t, end: at + 1 };
  if (t === 0xcc) {
    need(b, at + 1, 1);
    return { value: b[at + 1], end: at + 2 };
  }
  if (t === 0xcd) return { value: be16(b, at + 1), end: at + 3 };
  if (t === 0xce) return { value: be32(b, at + 1), end: at + 5 };
  return null;
}

/** A contacts part's header and where it ends (see contactsPartAt). */
export interface ContactsPart {
  /** the first contact's ordinal */
  start: number;
  /** how many contact rows the part holds */
  rows: number;
  /** one past the part's last byte */
  end: number;
}

/**
 * The snapshot part at `at` when it is a contacts part, `['c', start, rows]` (snapshot-format.ts),
 * read without decoding its rows: its start, row count and end. Null when the part is of another
 * kind. A contacts part whose start is not a non-negative integer, or whose rows are not an
 * array, throws a RangeError (a corrupt chunk); each row is stepped over as a whole value.
 */
export function contactsPartAt(b: Uint8Array, at: number, maxItems = Number.MAX_SAFE_INTEGER): ContactsPart | null {
  need(b, at, 3);
  // fixarray of 3, then the fixstr "c"
  if (b[at] !== 0x93 || b[at + 1] !== 0xa1 || b[at + 2] !== 0x63) return null;
  const start = uintAt(b, at + 3);
  if (start === null) throw new RangeError(`contacts part at ${at}: its start is not a non-negative integer`);
  let p = start.end;
  need(b, p, 1);
  const t = b[p];
  let rows: number;
  if (t >= 0x90 && t <= 0x9f) {
    rows = t & 0x0f;
    p += 1;
  } else if (t === 0xdc) {
    rows = be16(b, p + 1);
    p += 3;
  } else if (t === 0xdd) {
    rows = be32(b, p + 1);
    p += 5;
  } else {
    throw new RangeError(`contacts part at ${at}: its rows are not an array`);
  }
  claim(rows, maxItems, b, p);
  for (let i = 0; i < rows; i++) p = skipValue(b, p, maxItems);
  return { start: start.value, rows, end: p };
}
