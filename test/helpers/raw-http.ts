/**
 * A minimal HTTP/1.1 client on node:net for inputs fetch refuses to send (control characters,
 * bad methods, duplicated or odd headers, oversize lines) and for exact control of the bytes and
 * of reading (slow readers, idle connections). One request at a time per connection.
 */
import net from 'node:net';

export interface RawResponse {
  kind: 'response';
  status: number;
  /** header names lower-cased, in arrival order, duplicates kept */
  headers: Array<[string, string]>;
  body: Buffer;
  /** bytes of status line + headers + body */
  bytes: number;
}

/** The server closed the connection (or reset it) before a whole response arrived. */
export interface RawClosed {
  kind: 'closed';
  /** bytes received before the close (a truncated response, or nothing) */
  partial: Buffer;
}

/** Nothing complete arrived within the time allowed; the connection is left open. */
export interface RawTimeout {
  kind: 'timeout';
  partial: Buffer;
}

export type RawOutcome = RawResponse | RawClosed | RawTimeout;

export function header(r: RawResponse, name: string): string | undefined {
  const n = name.toLowerCase();
  return r.headers.find(([k]) => k === n)?.[1];
}

/** Parses one response at the start of `buf`; null when it is not complete yet. */
export function parseResponse(buf: Buffer, headRequest: boolean): RawResponse | null {
  // An interim `100 Continue` (answer to Expect) precedes the response: skip it.
  let skipped = 0;
  while (buf.subarray(skipped, skipped + 9).toString('latin1') === 'HTTP/1.1 ' && buf[skipped + 9] === 0x31 /* '1' */) {
    const e = buf.indexOf('\r\n\r\n', skipped);
    if (e < 0) return null;
    skipped = e + 4;
  }
  if (skipped > 0) {
    const r = parseResponse(buf.subarray(skipped), headRequest);
    return r && { ...r, bytes: r.bytes + skipped };
  }
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line ${JSON.stringify(lines[0].slice(0, 100))}`);
  const headers: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`bad response header line ${JSON.stringify(line.slice(0, 100))}`);
    headers.push([line.slice(0, i).toLowerCase(), line.slice(i + 1).trim()]);
  }
  const status = Number(m[1]);
  const cl = headers.filter(([k]) => k === 'content-length');
  if (cl.length > 1) throw new Error('several Content-Length headers in a response');
  let length = 0;
  if (!headRequest && status !== 204 && status !== 304) {
    if (cl.length === 0) throw new Error(`response ${status} without Content-Length`);
    length = Number(cl[0][1]);
  }
  const start = end + 4;
  if (buf.length < start + length) return null;
  return { kind: 'response', status, headers, body: buf.subarray(start, start + length), bytes: start + length };
}

/** One keep-alive connection; `request` sends bytes and waits for one response. */
export class RawConnection {
  private socket: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private pending: {
    head: boolean;
    resolve: (o: RawOutcome) => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  } | null = null;
  private connected: Promise<void>;
  closed = false;
  /** bytes that arrived when no request was waiting (never expected) */
  unsolicited = 0;

  constructor(port: number, host = '127.0.0.1') {
    this.socket = net.connect(port, host);
    this.socket.setNoDelay(true);
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.tryComplete();
    });
    this.socket.on('error', () => {
      /* reported as a close */
    });
    this.socket.on('close', () => {
      this.closed = true;
      const p = this.pending;
      if (p) {
        this.pending = null;
        clearTimeout(p.timer);
        p.resolve({ kind: 'closed', partial: this.buf });
      }
    });
  }

  private tryComplete(): void {
    const p = this.pending;
    if (!p) {
      this.unsolicited += this.buf.length;
      this.buf = Buffer.alloc(0);
      return;
    }
    let r: RawResponse | null;
    try {
      r = parseResponse(this.buf, p.head);
    } catch (err) {
      this.pending = null;
      clearTimeout(p.timer);
      this.destroy();
      p.reject(err as Error);
      return;
    }
    if (!r) return;
    this.pending = null;
    clearTimeout(p.timer);
    this.buf = this.buf.subarray(r.bytes);
    p.resolve(r);
    if (this.buf.length > 0) {
      this.unsolicited += this.buf.length;
      this.buf = Buffer.alloc(0);
    }
  }

  /** Sends `bytes` (one write) and resolves with the response, a close, or a timeout. */
  async request(bytes: Buffer | string, opts: { head?: boolean; timeoutMs?: number } = {}): Promise<RawOutcome> {
    if (this.pending) throw new Error('RawConnection: one request at a time');
    if (this.closed) return { kind: 'closed', partial: Buffer.alloc(0) };
    let connectTimer: NodeJS.Timeout | undefined;
    await Promise.race([this.connected, new Promise((r) => (connectTimer = setTimeout(r, opts.timeoutMs ?? 5000)))]);
    clearTimeout(connectTimer);
    return new Promise<RawOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = null;
        resolve({ kind: 'timeout', partial: this.buf });
      }, opts.timeoutMs ?? 5000);
      this.pending = { head: opts.head ?? false, resolve, reject, timer };
      if (this.closed) {
        this.pending = null;
        clearTimeout(timer);
        resolve({ kind: 'closed', partial: this.buf });
        return;
      }
      this.socket.write(bytes);
    });
  }

  destroy(): void {
    this.closed = true;
    this.socket.destroy();
  }
}

/** One request on a fresh connection, closed afterwards. */
export async function rawOnce(
  port: number,
  bytes: Buffer | string,
  opts: { head?: boolean; timeoutMs?: number } = {},
): Promise<RawOutcome> {
  const c = new RawConnection(port);
  try {
    return await c.request(bytes, opts);
  } finally {
    c.destroy();
  }
}

/** A GET request's bytes with Host and the given extra header lines. */
export function rawGet(target: string, headers: Array<[string, string]> = [], method = 'GET'): string {
  return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

/**
 * uWS (this build) buffers at most 4096 bytes of a request head that arrives over several reads,
 * then closes the connection unanswered (src/http/uws.ts). Whether a larger head, written at once,
 * reaches it in one read is up to the kernel: always here, not always on a loaded CI machine.
 */
export const UWS_SPLIT_HEAD_LIMIT = 4096;

/**
 * For heads over UWS_SPLIT_HEAD_LIMIT: sends the request on fresh connections until one is
 * answered (up to `attempts`). An answer is returned as soon as one comes, so a wrong answer still
 * fails the caller; only an unanswered close (the kernel split the head) is tried again.
 */
export async function rawOnceLarge(
  port: number,
  bytes: Buffer | string,
  opts: { head?: boolean; timeoutMs?: number; attempts?: number } = {},
): Promise<RawOutcome> {
  let last: RawOutcome | undefined;
  for (let i = 0; i < (opts.attempts ?? 8); i++) {
    last = await rawOnce(port, bytes, opts);
    if (last.kind !== 'closed' || last.partial.length > 0) return last;
  }
  return last!;
}
