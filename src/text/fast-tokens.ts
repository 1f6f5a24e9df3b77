/**
 * The tokens of CONTRACT 1 (`N(text).match(TOKEN)`) in one pass over the text: the project's one
 * tokenizer, which the index build and the query both reach through analyze.ts. Normalizing whole
 * messages (NFKD, a regex over marks, toLowerCase, a regex over tokens: four passes and three new
 * strings a message) was half of the build time.
 *
 * Why a per-code-point table gives the same answer: NFKD decomposes each code point on its own and
 * then only reorders runs of combining marks, which N() removes; toLowerCase() maps each code point
 * on its own except Greek capital sigma (final sigma depends on the neighbours). So
 * N(text) = concat of N(code point) for every text whose N() holds no U+03A3, and those texts take
 * the plain path. test/unit/text/text.test.ts checks the equality for every code point, in context.
 */
import { foldMarks, normalize, TOKEN } from './normalize.js';
import { fromCodes, type TokenInterner } from './token-interner.js';

/** How a BMP code unit maps under N(): */
const SEP = 0; // to text without a letter or digit (space, punctuation, most symbols): ends a token
const ONE = 1; // to one letter or digit, LOWER[c]
const NONE = 2; // to nothing (a mark): invisible, "cafe\u0301s" is one token
const MANY = 3; // to several code units, or letters and separators mixed: MAPPED[c]
const PLAIN = 4; // anything the table does not decide (capital sigma, surrogates): plain path
const UNSEEN = 5; // not classified yet: classify() on first sight

let KIND: Uint8Array | null = null;
let LOWER: Uint16Array;
let MAPPED: Array<string | undefined>;
/**
 * 1 for a BMP code unit of \p{L} or \p{N}, 0 for another, LN_UNSEEN before its first test (for
 * the code units of MAPPED strings, already N(): isLetterOrDigit).
 */
let IS_LN: Uint8Array;
const LN_UNSEEN = 2;
/** N() of astral code points met so far, or null when it holds a capital sigma. */
const astral = new Map<number, string | null>();

// Both from TOKEN, the one definition of the token class: one whole token, or some token inside.
const LETTER_OR_DIGIT = new RegExp(`^${TOKEN.source}$`, 'u');
const HAS_TOKEN = new RegExp(TOKEN.source, 'u');
const SIGMA = 'Σ';

function mapOne(ch: string): string | null {
  const decomposed = foldMarks(ch);
  return decomposed.includes(SIGMA) ? null : decomposed.toLowerCase();
}

/**
 * The tables, every code unit UNSEEN but the surrogates. A code unit is classified on first
 * sight (classify), not all 65,536 at start, which took ~50 ms and left ~3 MiB of garbage in
 * every thread that answers searches. (It also touched 4.2 MiB of the node binary's pages, but
 * a server touches the same ones when it loads msgpackr's native addon: bench/RESULTS.md.)
 */
function buildTables(): Uint8Array {
  const kind = new Uint8Array(0x10000).fill(UNSEEN);
  kind.fill(PLAIN, 0xd800, 0xe000);
  LOWER = new Uint16Array(0x10000);
  IS_LN = new Uint8Array(0x10000).fill(LN_UNSEEN);
  MAPPED = [];
  return kind;
}

/** Whether BMP code unit d is \p{L} or \p{N} (tested on its first sight). */
function isLetterOrDigit(d: number): boolean {
  let x = IS_LN[d];
  if (x === LN_UNSEEN) x = IS_LN[d] = LETTER_OR_DIGIT.test(String.fromCharCode(d)) ? 1 : 0;
  return x === 1;
}

/** Sets kind[c] (and LOWER[c] or MAPPED[c]) for an UNSEEN code unit c. */
function classify(kind: Uint8Array, c: number): void {
  const m = mapOne(String.fromCharCode(c));
  if (m === null) kind[c] = PLAIN;
  else if (m.length === 0) kind[c] = NONE;
  else if (m.length === 1 && LETTER_OR_DIGIT.test(m)) {
    LOWER[c] = m.charCodeAt(0);
    kind[c] = ONE;
  } else if (!HAS_TOKEN.test(m)) kind[c] = SEP;
  else {
    MAPPED[c] = m;
    kind[c] = MANY;
  }
}

/**
 * Allocates the tables now rather than in the first request that has a term to read: a server
 * calls it before it listens (the code units are classified as they come, see buildTables).
 */
export function warmTokenizer(): void {
  KIND ??= buildTables();
}

// Code units of the token being read, reused between calls.
let buf = new Uint16Array(256);
let len = 0;
let out: string[] = [];
/**
 * While internTokens runs: the ended tokens of the message, as code units one after another and
 * where each ends. They are interned only once the whole message took the table path, so a
 * message that falls back to the plain path midway adds no token it does not hold.
 */
let interning = false;
let msgCodes = new Uint16Array(1024);
let msgCodesLen = 0;
let msgEnds = new Uint32Array(256);
let msgTokens = 0;

/** Ends the token in `buf`: as a string (tokensOf), or its code units kept (internTokens). */
function endCodes(): void {
  if (interning) {
    if (msgCodesLen + len > msgCodes.length) {
      const g = new Uint16Array(Math.max(msgCodes.length * 2, msgCodesLen + len));
      g.set(msgCodes.subarray(0, msgCodesLen));
      msgCodes = g;
    }
    if (msgTokens === msgEnds.length) {
      const g = new Uint32Array(msgEnds.length * 2);
      g.set(msgEnds);
      msgEnds = g;
    }
    for (let k = 0; k < len; k++) msgCodes[msgCodesLen + k] = buf[k];
    msgCodesLen += len;
    msgEnds[msgTokens++] = msgCodesLen;
  } else out.push(fromCodes(buf, 0, len));
  len = 0;
}

function push(code: number): void {
  if (len === buf.length) {
    const g = new Uint16Array(buf.length * 2);
    g.set(buf);
    buf = g;
  }
  buf[len++] = code;
}

/**
 * Ends the token text[start, end), whose code units are in `buf`: tokensOf takes a token that is
 * the untouched source text (`plain`) with slice(), not rebuilt from code units.
 */
function endRun(text: string, start: number, end: number, plain: boolean): void {
  if (plain && !interning) {
    out.push(text.slice(start, end));
    len = 0;
  } else endCodes();
}

function endToken(): void {
  if (len > 0) endCodes();
}

/** Appends an already normalized mapping: its letters and digits join the token, the rest ends it. */
function pushMapped(m: string): void {
  for (let j = 0; j < m.length; j++) {
    const d = m.charCodeAt(j);
    if (d >= 0xd800 && d <= 0xdbff && j + 1 < m.length) {
      const pair = m.slice(j, j + 2);
      if (LETTER_OR_DIGIT.test(pair)) {
        push(d);
        push(m.charCodeAt(j + 1));
      } else endToken();
      j++;
    } else if (isLetterOrDigit(d)) push(d);
    else endToken();
  }
}

/** Same as `normalize(text).match(TOKEN) ?? []`. */
export function tokensOf(text: string): string[] {
  out = [];
  return scan(text) ?? out;
}

/**
 * The ids of `tokensOf(text)`, in order, pushed to `sink`, without a string per token: the index
 * build's path (token-interner.ts). Ids are those `interner` gives, new tokens added.
 */
export function internTokens(text: string, interner: TokenInterner, sink: { push(id: number): void }): void {
  interning = true;
  msgCodesLen = 0;
  msgTokens = 0;
  let plain: string[] | null;
  try {
    plain = scan(text);
  } finally {
    interning = false;
  }
  if (plain !== null) {
    for (const t of plain) sink.push(interner.idOfString(t));
    return;
  }
  for (let k = 0, from = 0; k < msgTokens; k++) {
    const to = msgEnds[k];
    sink.push(interner.idOf(msgCodes, from, to));
    from = to;
  }
}

/**
 * One pass over `text`: its tokens go to `out` (tokensOf) or the message's code units
 * (internTokens); returns null, or the whole answer from the plain path when the table cannot
 * decide a code unit (then what went to `out` or the code units is to be ignored).
 */
function scan(text: string): string[] | null {
  const kind = KIND ?? (KIND = buildTables());
  len = 0;
  const n = text.length;
  // While the current token is the untouched source text[start, i) (ASCII lower case letters and
  // digits only), it is taken with slice() rather than rebuilt from code units.
  let start = 0;
  let plainRun = true;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const k = kind[c];
    if (k === ONE) {
      const l = LOWER[c];
      if (len === 0) {
        start = i;
        plainRun = true;
      }
      if (plainRun && (l !== c || c >= 0x80)) plainRun = false;
      push(l);
    } else if (k === SEP) {
      if (len > 0) endRun(text, start, i, plainRun);
    } else if (k === NONE) {
      plainRun = false;
    } else if (k === MANY) {
      plainRun = false;
      pushMapped(MAPPED[c]!);
    } else if (k === UNSEEN) {
      // first sight of c: classified, then read again
      classify(kind, c);
      i--;
    } else {
      // A surrogate pair: its N(), cached; a lone surrogate or a capital sigma: the plain path.
      const d = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        const cp = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        let m = astral.get(cp);
        if (m === undefined) {
          m = mapOne(String.fromCodePoint(cp));
          if (astral.size < 65536) astral.set(cp, m);
        }
        if (m !== null) {
          plainRun = false;
          pushMapped(m);
          i++;
          continue;
        }
      }
      return normalize(text).match(TOKEN) ?? [];
    }
  }
  if (len > 0) endRun(text, start, n, plainRun);
  return null;
}

/** Same as `tokensOf(text).length > 0`, without building the tokens (a term's discard check). */
export function hasToken(text: string): boolean {
  const kind = KIND ?? (KIND = buildTables());
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (kind[c] === UNSEEN) classify(kind, c);
    const k = kind[c];
    // a MANY mapping always holds a letter or digit (classify), and neither N() nor its
    // context rule ever turns a letter or digit into a separator
    if (k === ONE || k === MANY) return true;
    if (k === PLAIN) return HAS_TOKEN.test(normalize(text));
  }
  return false;
}
