/**
 * Where API key records live: the port the key cache and the keys CLI use, implemented over files
 * and over Redis in src/store/ (which depends on auth/, never the reverse).
 */
import type { KeyRecord } from './key-record.js';

/** The API key records (CONTRACT 7). Every method rejects with an Error whose message starts with "store:". */
export interface KeyStore {
  putKey(record: KeyRecord): Promise<void>;
  getKey(prefix: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Returns false when there is no such key. */
  revokeKey(prefix: string, at: string): Promise<boolean>;
  /** Best-effort, batched: last_used_at of several keys. Never undoes a revocation. */
  touchKeys(lastUsed: Map<string, string>): Promise<void>;
}

/** The part of the key store a server uses (KeyCache); serving threads proxy exactly these to the main thread. */
export type ServingKeyStore = Pick<KeyStore, 'listKeys' | 'getKey' | 'touchKeys'>;
