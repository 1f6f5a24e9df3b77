/**
 * Where API key records live: the port the key cache and the keys CLI use, implemented over files
 * and over Redis in src/store/ (which depends on auth/, never the reverse).
 */
import type { KeyRecord } from './key-record.js';

/** The API key records (CONTRACT 7). Every method rejects with an Error whose message starts with "store:". */
export interface KeyStore {
  putKey(record: KeyRecord): Promise<void>;
  getKey(prefix: string, options?: ReadOptions): Promise<KeyRecord | null>;
  listKeys(options?: ReadOptions): Promise<KeyRecord[]>;
  /** Returns false when there is no such key. */
  revokeKey(prefix: string, at: string): Promise<boolean>;
  /** Best-effort, batched: last_used_at of several keys. Never undoes a revocation. */
  touchKeys(lastUsed: Map<string, string>): Promise<void>;
}

/**
 * `lastUses: false`: last_used_at may be left as the record carries it (a server never reads it;
 * on the embedded store they are files of their own, read synchronously: a 24 MB one stalled a
 * server's requests 2.6 s at a key change). Default true (the keys CLI shows them).
 */
export interface ReadOptions {
  lastUses?: boolean;
}

/** The part of the key store a server uses (KeyCache); serving threads proxy exactly these to the main thread. */
export type ServingKeyStore = Pick<KeyStore, 'listKeys' | 'getKey' | 'touchKeys'>;
