/**
 * Reference reading of a search request's parameters (CONTRACT 2, 4 and 10), written from the
 * contract text alone for the fuzz oracle: it shares no code with src/request (nor src/time), so the
 * fuzzer compares two readings. Together with `referenceSearch` it answers what a request must get.
 *
 * What it returns for a bad request is the set of parameters that must be named in `details`
 * (CONTRACT 10: every problem names exactly its own parameter; `from` later than `to` names
 * `from`; a missing term may name `q`, `keywords` or `keyword`). The sentences are the product's
 * own wording; the contract fixes only that each is there.
 */
import type { SearchRequest } from '../../src/request/search-request.js';
import { referenceTerms } from './brute-force.js';
import { referenceInstant } from './time.js';

export type ReferenceParams =
  | { ok: true; request: SearchRequest }
  | {
      ok: false;
      /** parameters that must be named, each once */
      named: Set<string>;
      /** no term is left: one more detail naming q, keywords or keyword */
      termMissing: boolean;
      /** q or keywords was invalid, so whether a term is left is not decided: that detail may or may not be there */
      termUndecided: boolean;
    };

// Spec 4.2 values, as the contract lists them (lower case only, CONTRACT 4).
const MATCH = ['any', 'all'];
const DIRECTION = ['inbound', 'outbound', 'all'];
const CHANNEL = ['whatsapp', 'whatsapp_cloud_api', 'instagram', 'telegram', 'email'];
const SINGLE = [
  'organization_id',
  'q',
  'keywords',
  'match',
  'direction',
  'channel',
  'from',
  'to',
  'limit',
  'offset',
  'messages_limit',
];
const MAX_SAFE = 2n ** 53n - 1n;

const HEX = '0123456789abcdefABCDEF';
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * application/x-www-form-urlencoded decoding of one component: `+` is a space, each run of `%XX`
 * is bytes that must be valid UTF-8. Null when malformed (a `%` without two hex digits, bad UTF-8).
 */
export function referenceFormDecode(s: string): string | null {
  let out = '';
  let bytes: number[] = [];
  const flush = (): boolean => {
    if (bytes.length === 0) return true;
    try {
      out += utf8.decode(new Uint8Array(bytes));
    } catch {
      return false;
    }
    bytes = [];
    return true;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '%') {
      const h = s[i + 1],
        l = s[i + 2];
      if (h === undefined || l === undefined || !HEX.includes(h) || !HEX.includes(l)) return null;
      bytes.push(parseInt(h + l, 16));
      i += 2;
      continue;
    }
    if (!flush()) return null;
    out += c === '+' ? ' ' : c;
  }
  return flush() ? out : null;
}

const isDigits = (s: string): boolean => s.length > 0 && [...s].every((c) => c >= '0' && c <= '9');

/** A decimal-digits-only integer within [min, max] (CONTRACT 4), or null. */
function integer(s: string, min: bigint, max: bigint): number | null {
  if (!isDigits(s)) return null;
  const n = BigInt(s);
  return n < min || n > max ? null : Number(n);
}

function isUuid(s: string): boolean {
  const groups = s.split('-');
  if (groups.length !== 5) return false;
  const sizes = [8, 4, 4, 4, 12];
  return groups.every((g, i) => g.length === sizes[i] && [...g].every((c) => HEX.includes(c)));
}

const codePoints = (s: string): number => [...s].length;

/** Reads a raw query string (no `?`) the way the contract says. */
export function referenceParams(raw: string): ReferenceParams {
  const named = new Set<string>();
  const values = new Map<string, string[]>();
  for (const piece of raw.split('&')) {
    if (piece === '') continue; // empty && pieces are skipped
    const eq = piece.indexOf('=');
    const rawName = eq < 0 ? piece : piece.slice(0, eq);
    const name = referenceFormDecode(rawName);
    if (name === null) {
      named.add(rawName); // the name itself is malformed: named as sent
      continue;
    }
    const value = eq < 0 ? '' : referenceFormDecode(piece.slice(eq + 1));
    if (value === null) {
      named.add(name);
      continue;
    }
    if (value === '') continue; // an empty value counts as absent
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  const one = (name: string): string | undefined => {
    const list = values.get(name);
    if (list === undefined) return undefined;
    if (list.length > 1) {
      named.add(name);
      return undefined;
    }
    return list[0];
  };
  const got = Object.fromEntries(SINGLE.map((n) => [n, one(n)])) as Record<string, string | undefined>;

  const org = got.organization_id;
  if (org === undefined) {
    if (!values.has('organization_id') && !named.has('organization_id')) named.add('organization_id');
  } else if (!isUuid(org)) named.add('organization_id');
  if (got.q !== undefined && codePoints(got.q) > 200) named.add('q');
  if (got.keywords !== undefined && codePoints(got.keywords) > 1000) named.add('keywords');
  const pick = (name: string, allowed: string[], dflt: string | null): string | null => {
    const v = got[name];
    if (v === undefined) return dflt;
    if (!allowed.includes(v)) named.add(name);
    return v;
  };
  const match = pick('match', MATCH, 'any');
  const direction = pick('direction', DIRECTION, 'inbound');
  const channel = pick('channel', CHANNEL, null);
  const num = (name: string, min: bigint, max: bigint, dflt: number): number => {
    const v = got[name];
    if (v === undefined) return dflt;
    const n = integer(v, min, max);
    if (n === null) named.add(name);
    return n ?? dflt;
  };
  const limit = num('limit', 1n, 100n, 50);
  const offset = num('offset', 0n, MAX_SAFE, 0);
  const messagesLimit = num('messages_limit', 0n, 20n, 3);
  const from = got.from === undefined ? null : referenceInstant(got.from, false);
  const to = got.to === undefined ? null : referenceInstant(got.to, true);
  if (got.from !== undefined && from === null) named.add('from');
  if (got.to !== undefined && to === null) named.add('to');
  if (from !== null && to !== null && from > to) named.add('from');

  const termUndecided = named.has('q') || named.has('keywords');
  const terms = termUndecided ? [] : referenceTerms(got.q ?? null, got.keywords ?? null, values.get('keyword') ?? []);
  const termMissing = !termUndecided && terms.length === 0;
  if (named.size > 0 || termMissing) return { ok: false, named, termMissing, termUndecided };
  return {
    ok: true,
    request: {
      organizationId: org!.toLowerCase(),
      terms,
      match: match as SearchRequest['match'],
      direction: direction as SearchRequest['direction'],
      channel: channel as SearchRequest['channel'],
      from,
      to,
      limit,
      offset,
      messagesLimit,
    },
  };
}

/** Checks a 400's `details` against the reference reading; returns what is wrong, or null. */
export function detailsProblem(
  details: { parameter: string; message: string }[],
  want: Extract<ReferenceParams, { ok: false }>,
): string | null {
  const got = details.map((d) => d.parameter);
  if (new Set(got).size !== got.length) return `a parameter is named twice: ${JSON.stringify(got)}`;
  if (details.some((d) => typeof d.message !== 'string' || d.message.length === 0)) return 'a detail without a message';
  const rest = new Set(got);
  for (const n of want.named) {
    if (!rest.delete(n)) return `${JSON.stringify(n)} must be named; got ${JSON.stringify(got)}`;
  }
  const TERM = ['q', 'keywords', 'keyword'];
  const extra = [...rest];
  if (want.termMissing) {
    // One detail for the missing term, naming q, keywords or keyword (unless one of those is named for it already).
    if (extra.length > 1 || (extra.length === 1 && !TERM.includes(extra[0])))
      return `unexpected ${JSON.stringify(extra)}; got ${JSON.stringify(got)}`;
    if (extra.length === 0 && !TERM.some((t) => want.named.has(t)))
      return `the missing term is not named; got ${JSON.stringify(got)}`;
    return null;
  }
  if (want.termUndecided && extra.length === 1 && TERM.includes(extra[0])) return null;
  return extra.length === 0 ? null : `unexpected ${JSON.stringify(extra)}; got ${JSON.stringify(got)}`;
}
