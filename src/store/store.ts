import type { OrgData } from '../model/records.js';

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

/** Pointer to one published snapshot of one organization. */
export interface SnapshotRef {
  organizationId: string;
  /** monotonically increasing per organization */
  version: number;
}

/**
 * The one interface both backends (embedded files, Redis) implement; the rest of the code never
 * knows which it has. Every method rejects with an Error whose message starts with "store:".
 */
export interface Store {
  readonly kind: 'embedded' | 'redis';
  /** Publishes atomically: after it resolves, latest() names the new version; a failure changes nothing visible. */
  publishSnapshot(data: OrgData): Promise<SnapshotRef>;
  /** Newest published version of every organization. */
  latest(): Promise<SnapshotRef[]>;
  /** Reads and verifies (format version, checksum) one snapshot; rejects clearly when corrupt. */
  loadSnapshot(ref: SnapshotRef): Promise<OrgData>;

  putKey(record: KeyRecord): Promise<void>;
  getKey(prefix: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Returns false when there is no such key. */
  revokeKey(prefix: string, at: string): Promise<boolean>;
  /** Best-effort, batched: last_used_at of several keys. */
  touchKeys(lastUsed: Map<string, string>): Promise<void>;

  close(): Promise<void>;
}
