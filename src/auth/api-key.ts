import { createHash, randomBytes } from 'node:crypto';

/** `crm_live_<prefix>_<secret>`: prefix 8 of [a-z0-9], secret 32 of [A-Za-z0-9] (CONTRACT 7). */
export const KEY_PATTERN = /^crm_live_([a-z0-9]{8})_([A-Za-z0-9]{32})$/;
export const PREFIX_PATTERN = /^[a-z0-9]{8}$/;

/** The scopes a key may hold; the endpoint needs both. */
export const KNOWN_SCOPES = ['contacts:read', 'messages:read'] as const;
export const REQUIRED_SCOPES: readonly string[] = KNOWN_SCOPES;

const PREFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const SECRET_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Uniform random characters by rejection sampling (no modulo bias). */
function randomString(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit) out += alphabet[b % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export interface NewKey {
  key: string;
  prefix: string;
  /** hex SHA-256 of the secret: the only thing stored */
  hash: string;
}

/** A fresh key with ~190 bits of secret entropy. */
export function generateKey(): NewKey {
  const prefix = randomString(PREFIX_ALPHABET, 8);
  const secret = randomString(SECRET_ALPHABET, 32);
  return { key: `crm_live_${prefix}_${secret}`, prefix, hash: hashSecret(secret) };
}

/** Hex SHA-256 of a key's secret part. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Splits a key into prefix and secret, or null when it is not of the contract's form. */
export function parseKey(token: string): { prefix: string; secret: string } | null {
  const m = KEY_PATTERN.exec(token);
  return m ? { prefix: m[1], secret: m[2] } : null;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or null. */
export function bearerToken(header: string): string | null {
  const m = /^[Bb][Ee][Aa][Rr][Ee][Rr] +(\S+) *$/.exec(header);
  return m ? m[1] : null;
}

/**
 * The Authorization value of a request whose Authorization lines were joined by '\n' (header
 * values never hold one): the first line when every line carries the same bearer token, else ''
 * (no key, a 401). Two different credentials are ambiguous: a proxy in front may act on the other.
 */
export function singleAuthorization(lines: string): string {
  const nl = lines.indexOf('\n');
  if (nl < 0) return lines;
  const token = bearerToken(lines.slice(0, nl));
  if (token === null) return '';
  for (const line of lines.split('\n')) if (bearerToken(line) !== token) return '';
  return lines.slice(0, nl);
}
