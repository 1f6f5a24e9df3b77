/**
 * Messages between the main thread and the serving threads (src/server/thread-pool.ts,
 * src/server/serving-thread.ts). Indexes travel as FlatIndex: their sections are
 * SharedArrayBuffer-backed, so posting one shares the memory, it does not copy it.
 */
import type { MessagePort } from 'node:worker_threads';
import type { KeyListing } from '../auth/key-cache.js';
import type { SharedRateLimit } from '../auth/rate-limit.js';
import type { Config } from '../config/config.js';
import type { PackedFlat } from '../store/packed-flat.js';

/** What a serving thread starts with. */
export interface ServingThreadData {
  config: Config;
  /** the process's token buckets (RATE_LIMIT_RPS), shared by every thread; null when off */
  rateLimit: SharedRateLimit | null;
  /** the bucket of store lookups for unknown key prefixes, shared by every thread */
  keyLookups: SharedRateLimit;
  /** the key listings of the main thread's key cache arrive here, as KeyListingMessage */
  keysPort: MessagePort;
  /** Int32 [0]: the generation of the newest listing posted to every thread's keysPort */
  keyGeneration: SharedArrayBuffer;
  /** Int32 [0]: KiB of response bodies the process holds for slow readers (SLOW_CLIENT_BUFFER_MB) */
  slowClientHeld: SharedArrayBuffer;
  /** set by tests only: the thread throws on a `fault` message */
  faultHook: boolean;
}

/** A key listing the main thread read, numbered: a thread installs it before it authenticates. */
export interface KeyListingMessage {
  generation: number;
  listing: KeyListing;
}

/** The catalog's state as a serving thread answers from it. */
export interface ServingState {
  ready: boolean;
  /** organizations that failed to load and have no older version in memory, with their Retry-After */
  unavailable: Array<[organizationId: string, retryAfterSeconds: number]>;
}

export type ToThread =
  | { kind: 'index'; seq: number; organizationId: string; version: number; flat: PackedFlat }
  | { kind: 'state'; seq: number; state: ServingState }
  | { kind: 'store-reply'; id: number; ok: true; value: unknown }
  | { kind: 'store-reply'; id: number; ok: false; message: string }
  | { kind: 'stop'; timeoutMs: number }
  /** a second SIGTERM/SIGINT: stop waiting for the responses in flight now */
  | { kind: 'hurry' }
  | { kind: 'fault' }
  /** touch the pages of a load's shared sections (store/prefault.ts) until `stop` [0] is set */
  | { kind: 'prefault'; buffer: SharedArrayBuffer; stop: SharedArrayBuffer }
  /** send the response counts now (a /metrics scrape waits for them): answered with an ack */
  | { kind: 'flush'; seq: number };

export type FromThread =
  | { kind: 'listening' }
  | { kind: 'listen-failed'; message: string }
  /** `seq` of an index or state message, applied; `keysReady` once the thread's key cache has loaded */
  | { kind: 'ack'; seq: number; keysReady: boolean }
  /** a key-store call made on the thread's behalf by the main thread (it owns the store) */
  | { kind: 'store'; id: number; method: 'getKey' | 'touchKeys'; args: unknown[] }
  /** responses since the last batch: [status, seconds] pairs */
  | { kind: 'observed'; pairs: number[] }
  | { kind: 'stopped'; drained: boolean }
  /** an uncaught exception: the thread closed its listener and exits (logged by the main thread, whose log survives) */
  | { kind: 'crashed'; message: string; stack: string };
