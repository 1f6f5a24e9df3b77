/**
 * Reads the fields of one Redis hash (a snapshot version's chunks) over a connection of its own,
 * without a memory allocation per socket read.
 *
 * Why not ioredis: each of its socket reads is a fresh 64 KiB Node buffer (malloc'd), a 4 MiB
 * chunk is ~64 of them, concatenated into one more 4 MiB buffer. All are freed after the load, but
 * glibc keeps most of them: a server loading 1M messages from Redis sat 31 MiB of malloc heap
 * (30-60 MiB of RSS) above the same server on the embedded store (bench/RESULTS.md, session 31).
 * Here every read lands in one small buffer shared by all readers, and each reply is copied into
 * one buffer the size of the largest chunk, allocated once a load.
 *
 * It speaks just enough RESP for that: AUTH, SELECT, pipelined HGETs (`window` in flight). Any
 * failure of the transport or of the protocol (refused, timed out, a reply other than expected,
 * MOVED during a resharding) is not thrown: the caller learns how many fields were delivered and
 * reads the rest through its ordinary client, whose errors are the ones operators know.
 */
import { connect, type Socket } from 'node:net';

/** Where and how to connect: one Redis node, no TLS (tls.connect has no `onread`). */
export interface RespTarget {
  host: string;
  port: number;
  username?: string | null;
  password?: string | null;
  /** database number to SELECT, when not 0 */
  db?: number | null;
  connectTimeoutMs: number;
  /** the longest wait for the next bytes of a reply */
  replyTimeoutMs: number;
}

export interface HashFieldsRequest {
  key: string;
  /** asked for and delivered in this order */
  fields: readonly string[];
  /** the largest value expected: a longer one is a failure (the caller's client reads it) */
  maxBytes: number;
  /** replies in flight at once */
  window: number;
  /**
   * Called with each field's value, in order (null: no such field). The bytes are overwritten by
   * the next value: use them before returning. What it throws rejects readHashFields as is.
   */
  onValue(index: number, value: Uint8Array | null): void;
}

/** The failure of a read that waited its timeout for Redis (paused, busy, a link gone quiet). */
export class ReplyTimeout extends Error {}

export interface HashFieldsResult {
  /** how many fields were given to onValue (all of them unless `failure`) */
  delivered: number;
  /** why the read stopped early, or null */
  failure: Error | null;
}

// One read buffer for every reader: a read callback consumes its bytes before it returns, and
// libuv calls the next read's allocation only after the callback of the one before.
const READ_BYTES = 64 * 1024;
let readBuffer: Buffer | null = null;

// a bulk header is a few bytes; an error line may be long, garbage is cut off
const MAX_HEADER = 1024;

function command(...args: string[]): string {
  let s = `*${args.length}\r\n`;
  for (const a of args) s += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return s;
}

export function readHashFields(target: RespTarget, req: HashFieldsRequest): Promise<HashFieldsResult> {
  return new Promise((resolve, reject) => {
    try {
      start(target, req, resolve, reject);
    } catch (err) {
      // nothing delivered yet: the caller reads every field through its client
      resolve({ delivered: 0, failure: err as Error });
    }
  });
}

function start(
  target: RespTarget,
  req: HashFieldsRequest,
  resolve: (r: HashFieldsResult) => void,
  reject: (err: unknown) => void,
): void {
  const fields = req.fields;
  if (fields.length === 0) {
    resolve({ delivered: 0, failure: null });
    return;
  }
  const value = Buffer.allocUnsafeSlow(Math.max(1, req.maxBytes));
  readBuffer ??= Buffer.allocUnsafeSlow(READ_BYTES);
  let setupReplies = 0;
  let setup = '';
  // (ioredis gives null for a URL without them)
  if (typeof target.password === 'string' && target.password !== '') {
    setup +=
      typeof target.username === 'string' && target.username !== ''
        ? command('AUTH', target.username, target.password)
        : command('AUTH', target.password);
    setupReplies++;
  }
  if (typeof target.db === 'number' && target.db !== 0) {
    setup += command('SELECT', String(target.db));
    setupReplies++;
  }
  let asked = 0;
  let delivered = 0;
  let settled = false;
  // reply parser state: a header line being read, a bulk value being copied, its CRLF skipped
  let header = '';
  let inBulk = false;
  let need = 0;
  let filled = 0;
  let crlfLeft = 0;

  const finish = (failure: Error | null, thrown?: unknown) => {
    if (settled) return;
    settled = true;
    socket.destroy();
    if (thrown !== undefined) reject(thrown);
    else resolve({ delivered, failure });
  };
  const fail = (what: string, Kind: new (message: string) => Error = Error) =>
    finish(new Kind(`redis direct read of ${req.key}: ${what}`));

  const askMore = () => {
    let out = '';
    while (asked < fields.length && asked - delivered < req.window) out += command('HGET', req.key, fields[asked++]);
    if (out !== '') socket.write(out);
  };

  const deliver = (v: Uint8Array | null): boolean => {
    try {
      req.onValue(delivered, v);
    } catch (err) {
      finish(null, err);
      return false;
    }
    delivered++;
    if (delivered === fields.length) {
      finish(null);
      return false;
    }
    askMore();
    return true;
  };

  /** One reply's header line (without CRLF); false when the read stops. */
  const onHeader = (line: string): boolean => {
    const kind = line.charCodeAt(0);
    if (kind === 45 /* - */) {
      fail(`Redis replied ${line.slice(1)}`);
      return false;
    }
    if (setupReplies > 0) {
      if (kind !== 43 /* + */) {
        fail(`unexpected reply ${JSON.stringify(line.slice(0, 20))} to AUTH or SELECT`);
        return false;
      }
      setupReplies--;
      return true;
    }
    const n = kind === 36 /* $ */ ? Number(line.slice(1)) : Number.NaN;
    if (n === -1) return deliver(null);
    if (!Number.isSafeInteger(n) || n < 0 || n > req.maxBytes) {
      fail(`unexpected reply ${JSON.stringify(line.slice(0, 20))} to HGET`);
      return false;
    }
    inBulk = true;
    need = n;
    filled = 0;
    crlfLeft = 2;
    return true;
  };

  const buf = readBuffer;
  // (returns true: never pause the socket; a value is used before the next read)
  const onRead = (nread: number): boolean => {
    if (!settled) consume(nread);
    return true;
  };
  const consume = (nread: number): void => {
    try {
      let p = 0;
      while (p < nread) {
        if (!inBulk) {
          let e = p;
          while (e < nread && buf[e] !== 10) e++;
          header += buf.toString('latin1', p, e);
          if (header.length > MAX_HEADER) {
            fail('reply header too long');
            return;
          }
          if (e === nread) return;
          p = e + 1;
          const line = header.endsWith('\r') ? header.slice(0, -1) : header;
          header = '';
          if (!onHeader(line)) return;
        } else if (filled < need) {
          const k = Math.min(need - filled, nread - p);
          buf.copy(value, filled, p, p + k);
          filled += k;
          p += k;
        } else {
          p++;
          if (--crlfLeft === 0) {
            inBulk = false;
            if (!deliver(value.subarray(0, need))) return;
          }
        }
      }
    } catch (err) {
      // not one of onValue's (those settle in deliver): a fault here must not escape a libuv callback
      fail((err as Error).message);
    }
  };

  const socket: Socket = connect({
    host: target.host,
    port: target.port,
    noDelay: true,
    onread: { buffer: readBuffer, callback: onRead },
  });
  socket.setTimeout(target.connectTimeoutMs);
  // Only a reply that does not come is Redis not answering (the load fails, as it would through the
  // client); a connection that cannot be made in time is this connection's own failure (a
  // firewall, a full accept queue), so the caller reads through its client instead.
  socket.on('timeout', () =>
    socket.connecting
      ? fail(`no connection within ${target.connectTimeoutMs} ms`)
      : fail(`no reply within ${target.replyTimeoutMs} ms`, ReplyTimeout),
  );
  socket.on('error', (err) => fail(err.message));
  socket.on('close', () => fail('connection closed'));
  socket.on('connect', () => {
    socket.setTimeout(target.replyTimeoutMs);
    if (setup !== '') socket.write(setup);
    askMore();
  });
}
