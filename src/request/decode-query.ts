/** Form decoding of a raw query string (CONTRACT 4, 10): `+` is a space, malformed `%` is an error. */

export interface DecodedQuery {
  /** every non-empty value of each name, in order */
  values: Map<string, string[]>;
  /** names (raw when the name itself is malformed) whose percent-encoding is malformed */
  malformed: string[];
}

const PLUS = /\+/g;

/**
 * Decodes one component; null when its encoding is malformed: bad hex, percent-encoded bytes that
 * are not UTF-8, or raw bytes that are not (uWS hands the target over as UTF-8 with U+FFFD in
 * place of each invalid byte, so `caf\xE9` sent raw would otherwise search for `caf\uFFFD` where
 * `caf%E9` is a 400).
 */
export function formDecode(s: string): string | null {
  if (s.indexOf('\uFFFD') >= 0) return null;
  if (s.indexOf('%') < 0) return s.indexOf('+') < 0 ? s : s.replace(PLUS, ' ');
  try {
    return decodeURIComponent(s.replace(PLUS, ' '));
  } catch {
    return null;
  }
}

/** Splits on `&`, skips empty pieces, decodes names and values; empty values count as absent. */
export function decodeQuery(raw: string): DecodedQuery {
  const values = new Map<string, string[]>();
  const malformed: string[] = [];
  if (raw.length === 0) return { values, malformed };
  for (const piece of raw.split('&')) {
    if (piece.length === 0) continue;
    const eq = piece.indexOf('=');
    const rawName = eq < 0 ? piece : piece.slice(0, eq);
    const rawValue = eq < 0 ? '' : piece.slice(eq + 1);
    const name = formDecode(rawName);
    if (name === null) {
      malformed.push(rawName);
      continue;
    }
    const value = formDecode(rawValue);
    if (value === null) {
      malformed.push(name);
      continue;
    }
    if (value.length === 0) continue;
    const list = values.get(name);
    if (list) list.push(value);
    else values.set(name, [value]);
  }
  return { values, malformed };
}
