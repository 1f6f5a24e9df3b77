import * as v from 'valibot';
/** A stored API key (CONTRACT 7). The secret itself is never stored, only its SHA-256 hex digest. */
export interface KeyRecord {
  prefix: string;
  name: string;
  /** hex SHA-256 of the secret part */
  hash: string;
  organization_ids: string[];
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

/**
 * The fields a server reads of a stored record, as it needs them: the store is written by this
 * project's CLI, but a hand-edited keys.json or Redis hash can hold anything (a null hash made
 * every refresh fail, so revocations stopped taking effect).
 */
const ServedKeyRecord = v.object({
  prefix: v.string(),
  hash: v.string(),
  organization_ids: v.array(v.string()),
  scopes: v.array(v.string()),
  expires_at: v.nullable(v.string()),
  revoked_at: v.nullable(v.string()),
});

/**
 * A stand-in for a stored record that could not be read at all (not JSON): refused by a server
 * and named by `keys list` like any malformed record, instead of failing the whole listing (one
 * such value in Redis stopped every server's key refresh, so revocations stopped taking effect).
 */
export function unreadableKeyRecord(prefix: string, why: string): KeyRecord {
  return { prefix, unreadable: why } as unknown as KeyRecord;
}

/** What is wrong with a stored record's shape, as "field: problem", or null when a server can read it. */
export function keyRecordProblem(record: unknown): string | null {
  const unreadable = (record as { unreadable?: unknown } | null)?.unreadable;
  if (typeof unreadable === 'string') return `record: ${unreadable}`;
  const r = v.safeParse(ServedKeyRecord, record);
  if (r.success) return null;
  const issue = r.issues[0];
  const path = v.getDotPath(issue);
  return `${path ?? 'record'}: ${issue.message}`;
}
