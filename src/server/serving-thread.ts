/**
 * A serving thread: its own uWS app on the public port (SO_REUSEPORT: the kernel spreads
 * connections over the threads), answering with the same pipeline as a single-thread server.
 * Indexes arrive from the main thread as shared sections and are wrapped without a copy; keys are
 * read through the main thread (it owns the store). An uncaught exception here must not abort the
 * process (FIELD-NOTES): it is logged, the listen socket closed, and the thread exits; the main
 * thread replaces it.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { KeyCache } from '../auth/key-cache.js';
import { RateLimiter } from '../auth/rate-limit.js';
import { createPublicApp } from '../http/public-app.js';
import { inFlight, SHUTDOWN_GRACE_MS } from '../http/respond.js';
import { loadUws, type us_listen_socket } from '../http/uws.js';
import { warmTokenizer } from '../text/analyze.js';
import { createLogger } from '../log/logger.js';
import { collectGarbage, shrinkHeap } from '../runtime/collect-garbage.js';
import { type LazyIndex, postedIndex, sweepIdle } from '../store/flat-index.js';
import { touchPages } from '../store/prefault.js';
import type { ServingKeyStore } from '../auth/key-store.js';
import type { FromThread, KeyListingMessage, ServingState, ServingThreadData, ToThread } from './thread-protocol.js';

const port = parentPort!;
const { config, faultHook, rateLimit, keyLookups, keysPort, keyGeneration, slowClientHeld } =
  workerData as ServingThreadData;
const logger = createLogger(config.logLevel).child({ thread: process.env.SERVING_THREAD_NAME ?? 'serving' });
const post = (m: FromThread) => port.postMessage(m);

let socket: us_listen_socket | null = null;
const uws = loadUws();

// Exiting while uWS may still dispatch a request on an open connection terminates the whole
// process (the handler cannot run, so it "returns without responding"), and ending a worker
// whose loop holds connections aborts it. So a failed thread stops accepting, lets the main
// thread start its replacement at once, finishes the answers being written (at most 5 s),
// closes all its connections, then exits.
const DYING_MAX_MS = 5_000;
let dyingSince = 0;
process.on('uncaughtException', (err) => {
  const first = dyingSince === 0;
  try {
    post({ kind: 'crashed', message: String(err?.message ?? err), stack: String(err?.stack ?? '') });
  } catch {
    /* the port is gone */
  }
  if (!first) return;
  dyingSince = Date.now();
  closeListener();
  // Answers being written finish (bounded), then every connection of this thread is closed.
  const timer = setInterval(() => {
    if (inFlight.count > 0 && Date.now() - dyingSince < DYING_MAX_MS) return;
    clearInterval(timer);
    // told first, so that a shutdown waiting for this thread reports whether answers were cut
    const drained = inFlight.count === 0;
    closeApp();
    try {
      post({ kind: 'stopped', drained });
    } catch {
      /* the port is gone */
    }
    setTimeout(() => process.exit(1), 50);
  }, 100);
});
process.on('unhandledRejection', (err) => logger.error({ err }, 'serving thread: unhandled rejection'));

/**
 * Closes every connection of this thread's app (the native App has close(); the typings lack
 * it). A worker whose uWS loop still holds a connection when it ends (an idle keep-alive) aborts
 * the whole process (uv_loop_close with open handles), so this runs before any exit.
 */
function closeApp(): void {
  closeListener();
  try {
    (app as unknown as { close(): void }).close();
  } catch {
    /* already closed */
  }
}

function closeListener(): void {
  if (socket === null) return;
  try {
    uws.us_listen_socket_close(socket);
  } catch {
    /* already closed */
  }
  socket = null;
}

// Key-store calls are answered by the main thread.
let nextId = 1;
const calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
function call<T>(method: 'getKey' | 'touchKeys', args: unknown[]): Promise<T> {
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
    post({ kind: 'store', id, method, args });
  });
}
const keyStore: ServingKeyStore = {
  // The key set is not listed here: the main thread's cache sends its listings (below).
  listKeys: () => Promise.reject(new Error('store: a serving thread does not list keys')),
  getKey: (prefix: string) => call('getKey', [prefix]),
  touchKeys: (lastUsed: Map<string, string>) => call('touchKeys', [lastUsed]),
};

// Unknown prefixes take from the process's one lookup bucket: N threads do not read the store N times as often.
// The main thread's key listings: each is posted to every thread, then the shared generation moves.
// Before authenticating, a thread behind that generation takes the listing off its channel
// synchronously, so once any thread refuses a revoked key, every thread does.
const generation = new Int32Array(keyGeneration);
let installed = 0;
function install(m: KeyListingMessage): void {
  if (m.generation <= installed) return;
  keys.install(m.listing);
  installed = m.generation;
}
function installPending(): void {
  for (let r = receiveMessageOnPort(keysPort); r !== undefined; r = receiveMessageOnPort(keysPort))
    install(r.message as KeyListingMessage);
}
const keys = new KeyCache(keyStore, {
  logger,
  lookupLimiter: RateLimiter.attach(keyLookups),
  beforeAuthenticate: () => {
    if (Atomics.load(generation, 0) !== installed) installPending();
  },
});
keysPort.on('message', install);
const indexes = new Map<string, LazyIndex>();
// An organization no request reached on this thread for 5-10 minutes lets its views go (dropIfIdle).
sweepIdle(() => indexes.values());
let state: ServingState = { ready: false, unavailable: [] };
let unavailable = new Map<string, number>();

// Responses are counted here and sent to the main thread's registry in batches.
let observed: number[] = [];
const flushObserved = () => {
  if (observed.length === 0) return;
  post({ kind: 'observed', pairs: observed });
  observed = [];
};
setInterval(flushObserved, 100).unref();

const app = createPublicApp({
  uws,
  keys,
  logger,
  sunsetAt: config.sunsetAt,
  slowClientBufferBytes: config.slowClientBufferBytes,
  slowClientHeld,
  // The main thread's buckets, in shared memory: a key's limit holds over all threads together.
  rateLimiter: rateLimit === null ? null : RateLimiter.attach(rateLimit),
  metrics: {
    observe(_listener, status, startedAt) {
      observed.push(status, Number(process.hrtime.bigint() - startedAt) / 1e9);
    },
  },
  indexes: {
    isReady: () => state.ready,
    get: (org) => indexes.get(org)?.index ?? null,
    // the shard of this replica (ORGANIZATIONS), as the main thread's catalog holds it: 421 otherwise
    holds: (org) => config.organizations === null || config.organizations.has(org),
    unavailable: (org) => {
      const s = unavailable.get(org);
      return s === undefined ? null : { retryAfterSeconds: s };
    },
  },
});

// Index, state and flush messages are each applied at once, synchronously, in the order sent, so
// their acks go out in that order. A failure is an uncaught exception: the thread is replaced.
function applyIndex(m: Extract<ToThread, { kind: 'index' }>): void {
  // Wrapped on its first request here (postedIndex); no dictionary to rebuild: the main thread
  // derived its lookup sections before posting them.
  const index = postedIndex(m.flat);
  // One Map.set: a request sees the old index or the new one, never a mix.
  const replaced = indexes.has(m.organizationId);
  indexes.set(m.organizationId, index);
  // The old sections are freed only once every thread has dropped them: collect soon.
  if (replaced) collectGarbage('background');
  ack(m.seq);
}

function ack(seq: number): void {
  if (heldAcks !== null) heldAcks.push(seq);
  else sendAck(seq);
}

function sendAck(seq: number): void {
  installPending(); // a listing sent before this message counts for keysReady
  post({ kind: 'ack', seq, keysReady: keys.ready });
}

/**
 * Acks waiting for the collection at the first ready state (in the order of their messages):
 * the main thread says ready once every thread acked it, so the start's garbage and grown young
 * generation are gone by then (shrinkHeap), not ~8 s later. null: none held.
 */
let heldAcks: number[] | null = null;
let shrunk = false;
function shrinkBeforeReady(): void {
  shrunk = true;
  heldAcks = [];
  void shrinkHeap().finally(() => {
    const held = heldAcks!;
    heldAcks = null;
    for (const seq of held) sendAck(seq);
  });
}

port.on('message', (m: ToThread) => {
  switch (m.kind) {
    case 'index':
      applyIndex(m);
      break;
    case 'state':
      state = m.state;
      unavailable = new Map(m.state.unavailable);
      if (state.ready && !shrunk) shrinkBeforeReady();
      ack(m.seq);
      break;
    case 'store-reply': {
      const c = calls.get(m.id);
      if (c === undefined) break;
      calls.delete(m.id);
      if (m.ok) c.resolve(m.value);
      else c.reject(new Error(m.message));
      break;
    }
    case 'stop':
      void stop(m.timeoutMs);
      break;
    case 'hurry':
      // a second signal: stop()'s wait for the responses in flight ends now
      inFlight.hurry();
      break;
    case 'flush':
      flushObserved();
      ack(m.seq);
      break;
    case 'prefault':
      void touchPages(m.buffer, new Int32Array(m.stop));
      break;
    case 'fault':
      if (faultHook)
        setImmediate(() => {
          throw new Error('serving thread: fault injected by a test');
        });
      break;
  }
});

async function stop(timeoutMs: number): Promise<void> {
  closeListener();
  const drained = await inFlight.drain(timeoutMs, SHUTDOWN_GRACE_MS);
  await keys.stop().catch(() => undefined);
  keysPort.close();
  flushObserved();
  closeApp();
  post({ kind: 'stopped', drained });
  port.close();
}

await keys.start('installed');
// the tokenizer's tables allocated before the first request, not in it
warmTokenizer();
// Same port as the other threads; the main thread refused a port held by another process before.
app.listen(config.host, config.port, (s) => {
  if (s) {
    socket = s;
    post({ kind: 'listening' });
  } else {
    post({
      kind: 'listen-failed',
      message: `http: cannot listen on ${config.host}:${config.port} (PORT ${config.port} is in use or not permitted)`,
    });
  }
});
