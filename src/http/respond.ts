import { randomUUID } from 'node:crypto';
import type { Answer } from './answer.js';
import type { HttpError } from './errors.js';
import type { HttpResponse } from './uws.js';

const STATUS_LINES: Record<number, string> = {
  200: '200 OK',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  414: '414 URI Too Long',
  421: '421 Misdirected Request',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export const JSON_TYPE = 'application/json; charset=utf-8';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's X-Request-Id when it is 1-128 of [A-Za-z0-9._-], else a fresh UUID (CONTRACT 6). */
export function requestIdFor(header: string): string {
  return REQUEST_ID.test(header) ? header : randomUUID();
}

/** One response on its way out, and whether the client left. */
export interface Exchange {
  readonly res: HttpResponse;
  aborted: boolean;
  /** what the request's `Connection` header asks of this connection after the answer (see closeOf) */
  readonly close: CloseAsked;
  /** false on the operator listener: its answers are never cut for the slow readers' budget */
  readonly budgeted: boolean;
}

/**
 * NO: keep-alive. BY_UWS: a first line of 5 characters (`close` itself, or any other), which uWS
 * reads as a close (its test is the value's length) and carries out after the answer, but without
 * telling the client: we write the `Connection: close` header. ASKED: `close` among other options
 * (`keep-alive, close`, or over several lines), which uWS ignores: we close as while draining
 * (end(body, true)).
 */
export const CloseAsked = { NO: 0, BY_UWS: 1, ASKED: 2 } as const;
export type CloseAsked = (typeof CloseAsked)[keyof typeof CloseAsked];

/**
 * CloseAsked of a request's `Connection` lines: `first`, the first line's value (the one uWS
 * tests; '' without one), and `all`, every line's value joined as one list (RFC 9110 7.6.1 and
 * 5.3: options in any case, repeated lines one list).
 */
export function closeOf(first: string, all: string | undefined): CloseAsked {
  // (`hello` too: uWS closes after it, and the client is told so)
  if (first.length === 5) return CloseAsked.BY_UWS;
  if (all === undefined || all.length < 5) return CloseAsked.NO;
  for (const option of all.split(',')) if (option.trim().toLowerCase() === 'close') return CloseAsked.ASKED;
  return CloseAsked.NO;
}

/** Headers every response of a listener carries besides Content-Type and X-Request-Id. */
export interface CommonHeaders {
  /** e.g. Cache-Control, Sunset, Deprecation */
  readonly pairs: ReadonlyArray<readonly [string, string]>;
}

/** Builds the fixed headers once: Cache-Control always, Sunset + Deprecation when a sunset is set. */
export function commonHeaders(sunsetAt: number | null): CommonHeaders {
  const pairs: Array<readonly [string, string]> = [['Cache-Control', 'no-store']];
  if (sunsetAt !== null) {
    pairs.push(['Sunset', new Date(sunsetAt).toUTCString()], ['Deprecation', 'true']);
  }
  return { pairs };
}

/**
 * Responses whose body is still being written because the client reads slowly. Shutdown waits for
 * them (bounded) before exiting.
 */
class InFlight {
  private n = 0;
  /**
   * KiB of the bodies held for slow readers (writeBody's copies), [0] of an Int32Array that every
   * serving thread of the process shares (attachHeld), so the budget is the process's
   */
  private held = new Int32Array(new SharedArrayBuffer(4));
  /** SLOW_CLIENT_BUFFER_MB in bytes: the most heldBytes may reach beside the first body held */
  heldMax = Number.POSITIVE_INFINITY;
  /** Counts the held bodies in `shared` (a SharedArrayBuffer of 4 bytes the main thread made). */
  attachHeld(shared: SharedArrayBuffer): void {
    this.held = new Int32Array(shared);
  }
  get heldBytes(): number {
    return Atomics.load(this.held, 0) * 1024;
  }
  /** Counts a body of `bytes` held (n > 0) or let go (n < 0), in whole KiB. */
  hold(bytes: number, n: 1 | -1): void {
    Atomics.add(this.held, 0, n * Math.ceil(bytes / 1024));
  }
  /** told of a response refused or cut because of heldMax (a log line) */
  onCut: ((what: string, bodyBytes: number, heldBytes: number) => void) | null = null;
  /**
   * Whether a body of `bytes` would take the process past heldMax, were it held, with another
   * body held already: then a large one is refused before it is written (busyAnswer).
   */
  wouldOverflow(bytes: number): boolean {
    const held = this.heldBytes;
    return held > 0 && held + bytes > this.heldMax;
  }
  private waiters: Array<() => void> = [];
  get count(): number {
    return this.n;
  }
  add(): void {
    this.n++;
  }
  done(): void {
    this.n--;
    if (this.n === 0) for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves once no response is being written any more. */
  idle(): Promise<void> {
    return this.n === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
  /** Ends the waits of drain() now (a second stop signal). */
  private hurryWaits: Array<() => void> = [];
  /**
   * Set by drain(): the listener is closed and the connections are about to be. Every answer
   * then says `Connection: close`, so that a keep-alive client stops sending on a connection that
   * is going away (it gets its answer, then reconnects elsewhere).
   */
  closing = false;
  /**
   * A shutdown's wait: true once every response is written, false after `timeoutMs` or at hurry()
   * with responses still being written.
   * With `graceMs`, it also waits that long (within `timeoutMs`): requests on open keep-alive
   * connections are still answered meanwhile, with `Connection: close`. Without it, a client
   * that sent one just after the signal had its connection reset unanswered (every connection
   * of a busy client lost one request: the lifecycle audit).
   */
  drain(timeoutMs: number, graceMs = 0): Promise<boolean> {
    this.closing = true;
    const grace = Math.min(graceMs, timeoutMs);
    return Promise.race([
      Promise.all([this.idle(), new Promise((resolve) => setTimeout(resolve, grace).unref())]).then(() => true),
      new Promise<boolean>((resolve) => {
        setTimeout(() => resolve(false), timeoutMs).unref();
        // (nothing in flight, only the grace left: nothing is cut; it logged "cut" and
        // drained:false for a second signal on an idle server: a regression audit)
        this.hurryWaits.push(() => resolve(this.n === 0));
      }),
    ]);
  }
  /** Stops waiting for the responses in flight (they are cut by the exit that follows). */
  hurry(): void {
    for (const w of this.hurryWaits.splice(0)) w();
  }
}
export const inFlight = new InFlight();

/**
 * How long a shutdown keeps answering on open connections (see InFlight.drain): a keep-alive
 * client that sends within it gets its answer and `Connection: close`.
 */
export const SHUTDOWN_GRACE_MS = 500;

/**
 * Writes a whole answer. Safe to call after an await (it corks) and after an abort (it does
 * nothing). The body goes out with backpressure (see writeBody).
 */
export function writeAnswer(ex: Exchange, answer: Answer): void {
  if (ex.aborted) return;
  const res = ex.res;
  res.cork(() => {
    res.writeStatus(STATUS_LINES[answer.status] ?? `${answer.status} Unknown`);
    for (const [k, v] of answer.headers) res.writeHeader(k, v);
    const body = answer.body;
    if (ex.close === CloseAsked.BY_UWS) {
      // uWS closes after this answer (the client asked), without the header that says so
      res.writeHeader('Connection', 'close');
    } else if (inFlight.closing || ex.close === CloseAsked.ASKED) {
      if (!answer.head && byteLength(body) <= CLOSE_AFTER_MAX) {
        // end(body, true): uWS writes `Connection: close` itself, sends the body (copying what
        // the socket does not take) and then closes the connection. With the header alone the
        // client had its answer but the socket stayed open until the process exited (regression
        // audit).
        res.end(body, true);
        return;
      }
      // (a HEAD answer or a large body: the header only; endWithoutBody(length, true) of this
      // build closed without sending anything, and a large body keeps its backpressure tracking)
      res.writeHeader('Connection', 'close');
    }
    // endWithoutBody(length) of this uWS build never completes the response; the explicit
    // Content-Length header (in answer.headers) plus endWithoutBody() does.
    if (answer.head) res.endWithoutBody();
    else writeBody(ex, body);
  });
}

/**
 * Bodies up to this many bytes are ended with a close while draining or when the client asked for
 * one (writeAnswer). uWS buffers what the socket does not take of them itself, outside the
 * slow-reader budget (writeBody): an audit's 400 slow clients sending `Connection: keep-alive,
 * close` for 960 KB bodies took 340 MB past a 16 MiB budget when this was 1 MiB. At 64 KiB (the
 * size past which a busy server refuses a body: uws-adapter.ts) a larger body goes through
 * writeBody and is counted; the connection then closes when the client closes it, as it said it
 * would, or at uWS's idle timeout.
 */
const CLOSE_AFTER_MAX = 1 << 16;

export function byteLength(body: string | Uint8Array): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
}

/**
 * Ends the response with `body` (a string, or bytes that uWS copies) without ever holding more than the body itself for a slow reader:
 * `res.end()` would copy whatever the socket does not take into uWS's own buffer, and a client
 * pipelining requests it never reads would grow that buffer without bound. `tryEnd` writes what
 * the socket takes; the rest is written from `onWritable` as the client reads. While such a
 * response is pending, uWS closes the connection if the client pipelines another request on it.
 */
function writeBody(ex: Exchange, body: string | Uint8Array): void {
  const res = ex.res;
  const total = byteLength(body);
  const start = res.getWriteOffset();
  const [ok, done] = res.tryEnd(body, total);
  if (ok || done) return;
  // Another slow reader's body is held already and this one would take the process past
  // SLOW_CLIENT_BUFFER_MB: the response is cut, its connection closed after what the socket took,
  // rather than held too (40 readers of 220 MB bodies held 8.8 GB: the resource audit). Bodies
  // over 64 KiB were refused before a byte went out (uws-adapter.ts busyAnswer), so this is the
  // fallback for a smaller one that the socket did not take (not seen on loopback). The first
  // body is always held, so one larger than the budget still reaches a client that reads it.
  if (ex.budgeted && inFlight.wouldOverflow(total)) {
    inFlight.onCut?.('cut after what the socket took', total, inFlight.heldBytes);
    // closed after this cork, not inside it; until then an abort must be heard (FIELD-NOTES)
    res.onAborted(() => {
      ex.aborted = true;
    });
    setImmediate(() => {
      if (!ex.aborted) res.close();
    });
    return;
  }
  // What the socket did not take is written later, from our own copy: a Uint8Array body is a
  // view of the thread's reusable output buffer, overwritten by the next search.
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    inFlight.hold(bytes.length, -1);
    inFlight.done();
  };
  inFlight.hold(bytes.length, 1);
  inFlight.add();
  res.onAborted(() => {
    ex.aborted = true;
    finish();
  });
  res.onWritable((offset) => {
    if (ex.aborted) return true;
    try {
      const [sent, ended] = res.tryEnd(bytes.subarray(offset - start), total);
      if (ended) finish();
      return sent;
    } catch {
      // The response is gone (closed under us): nothing more to write.
      finish();
      return true;
    }
  });
}

/** The one place an error becomes a response: the CONTRACT 5 body, with `details` on 400. */
export function renderError(err: HttpError, requestId: string): string {
  const body: { error: string; message: string; request_id: string; details?: unknown } = {
    error: err.code,
    message: err.message,
    request_id: requestId,
  };
  if (err.status === 400) body.details = err.details ?? [];
  return JSON.stringify(body);
}
