/**
 * Snapshots in Redis. One organization's keys share the hash tag `{<org>}` so its multi-key
 * operations stay legal on Redis Cluster:
 *
 *   snap:{<org>}:ptr          hash {version, previous}: the pointer readers follow
 *   snap:{<org>}:seq          INCR counter allocating versions
 *   snap:{<org>}:versions     sorted set of versions written (complete or not), for clean-up
 *   snap:{<org>}:v:<n>        hash {writer, manifest, 0, 1, ...}: one version's writer (host, pid,
 *                             start), manifest and chunks
 *   snap:orgs                 set of organization ids that ever published
 *
 * Publish: chunks and manifest under a fresh version, then the pointer moves forward in one
 * script call, so a reader never sees half a snapshot; versions older than the previous one are
 * unlinked afterwards.
 */
import type { OrgData } from '../model/records.js';
import type { FlatIndex } from './flat-index.js';
import type { RedisConnection } from './redis-connection.js';
import {
  CHUNK_MAX,
  type DecodePurpose,
  encodeSnapshot,
  type Manifest,
  parseManifest,
  prepareSnapshot,
  SnapshotDecoder,
} from './snapshot-format.js';
import type {
  LatestListing,
  LoadFlatOptions,
  PublishOptions,
  SnapshotRef,
  SnapshotStore,
  StagedSnapshot,
} from './snapshot-store.js';
import { isVersion, publishStaged } from './snapshot-store.js';
import { ReplyTimeout, readHashFields } from './resp-hash-reader.js';
import { isCanonicalOrganizationId } from '../model/organization-id.js';
import { hostname } from 'node:os';
import { onThisHost, pidAlive, pidNamespace } from './file-utils.js';

/**
 * A version newer than the pointer whose writer is gone: a publisher killed midway, its chunks
 * (hundreds of MB at 1M) never switched to. Its writer's pid dead on this host, or older than this.
 */
const ABANDONED_AFTER_MS = 24 * 3600_000;

/** Who writes a version: enough to tell later whether it is still being written (sweepAbandoned). */
interface Writer {
  hostname: string;
  pidNamespace: string | null;
  pid: number;
  at: number;
}

/** Incremented after every pointer move: the snapshot pollers' change token. */
const CHANGES_KEY = 'snap:changes';

// Chunks in flight at once on read and write: enough to hide latency, bounded memory.
const WINDOW = 8;

/**
 * A server's load reads a snapshot of more than this many bytes on a connection of its own
 * (resp-hash-reader.ts); a smaller one through the shared client, where it costs no connection
 * (a start over thousands of small organizations would otherwise open one for each).
 */
const DIRECT_MIN_BYTES = CHUNK_MAX;

// Moves the pointer forward only: returns the old version (its previous when the pointer is at
// this version already: see below), or -current when it is newer.
// A pointer that is not a hash, or names no version, is unreadable (the listing names it): it is
// replaced, as the embedded store replaces a garbled CURRENT, so that an import repairs it.
// Idempotent: ioredis sends a command again after a reconnection when its reply was lost, and a
// pointer already at this version (versions are never allocated twice) is this switch done: its
// previous is returned, as the first run did. Taken for a newer publisher's, the import deleted the
// version the pointer named and failed (a review, with a proxy that dropped the reply).
// A version is what the listing accepts (isVersion: -3, 1e999 or 2^53 + 1, unreadable there,
// were taken here for a newer pointer: the import failed, or removed its own).
const SWITCH_SCRIPT = `
local function version(s)
  local n = tonumber(s)
  if n == nil or n < 1 or n > 9007199254740991 or n ~= math.floor(n) then return nil end
  return n
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
local cur = 0
if kind == 'hash' then
  local raw = redis.call('HGET', KEYS[1], 'version')
  if raw then cur = version(raw) or 0 end
end
local v = tonumber(ARGV[1])
if cur == v then return version(redis.call('HGET', KEYS[1], 'previous') or '0') or 0 end
if cur > v then return -cur end
redis.call('HSET', KEYS[1], 'version', v, 'previous', cur)
return cur`;

// Allocates a version. A fresh counter (new organization, or a Redis that lost its data) starts
// at the current time in ms, so versions never repeat after a data loss: a server still holding
// an old version 1 must not mistake a new version 1 for it.
const NEXT_VERSION_SCRIPT = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then v = tonumber(ARGV[1]); redis.call('SET', KEYS[1], v) end
return v`;

const snapKey = (org: string, rest: string): string => `snap:{${org}}:${rest}`;
const versionKey = (ref: SnapshotRef): string => snapKey(ref.organizationId, `v:${ref.version}`);

/**
 * Whether a version's writer (its `writer` field) is gone: its process dead on this host, or the
 * version a day old. Without the field (written before it, or its very first instant) it is not
 * judged here: its organization's next publish removes it.
 */
function abandoned(field: string | null): boolean {
  if (field === null) return false;
  let w: Writer;
  try {
    w = JSON.parse(field) as Writer;
  } catch {
    return false;
  }
  if (typeof w?.at !== 'number' || typeof w.pid !== 'number') return false;
  if (Date.now() - w.at > ABANDONED_AFTER_MS) return true;
  return onThisHost(w) && !pidAlive(w.pid);
}

/** Snapshots over one Redis connection. */
export class RedisSnapshotStore implements SnapshotStore {
  private readonly conn: RedisConnection;
  /** the one sweep of abandoned versions (sweepAbandoned), started by the first publish */
  private swept: Promise<void> | undefined;

  constructor(conn: RedisConnection) {
    this.conn = conn;
  }

  publishSnapshot(data: OrgData, options: PublishOptions = {}): Promise<SnapshotRef> {
    return publishStaged(this, data, options);
  }

  async stageSnapshot(data: OrgData, options: PublishOptions = {}): Promise<StagedSnapshot> {
    const org = data.organizationId;
    if (!isCanonicalOrganizationId(org))
      throw new Error(`store: organization id must be a lower-case UUID, got ${JSON.stringify(org)}`);
    // Built before any key is written: a build failure leaves Redis untouched.
    const prepared = prepareSnapshot(data, options.format, options.consumeText);
    // Other organizations' abandoned versions, once a store: a failure leaves them as they were.
    this.swept ??= this.sweepAbandoned().catch(() => {});
    await this.swept;
    let written: SnapshotRef | null = null;
    const ref = await this.conn
      .run(`publishing organization ${org}`, async () => {
        const r = this.conn.client;
        await r.sadd('snap:orgs', org);
        const version = Number(await r.eval(NEXT_VERSION_SCRIPT, 1, snapKey(org, 'seq'), String(Date.now())));
        const ref = { organizationId: org, version };
        const key = versionKey(ref);
        // Recorded first, so a publisher killed midway leaves something the next clean-up finds.
        await r.zadd(snapKey(org, 'versions'), version, String(version));
        written = ref;
        const writer: Writer = { hostname: hostname(), pidNamespace: pidNamespace(), pid: process.pid, at: Date.now() };
        await r.hset(key, 'writer', JSON.stringify(writer));
        // at most WINDOW - 1 chunks are in flight when the next is asked for (see the loop)
        const enc = encodeSnapshot(prepared, version, WINDOW);
        let i = 0,
          inFlight: Promise<unknown>[] = [];
        for (const chunk of enc.chunks) {
          inFlight.push(r.hset(key, String(i++), Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
          if (inFlight.length >= WINDOW) {
            await Promise.all(inFlight);
            inFlight = [];
          }
        }
        await Promise.all(inFlight);
        await r.hset(key, 'manifest', Buffer.from(enc.manifest()));
        return ref;
      })
      .catch(async (err: unknown) => {
        // the chunks written so far (a full Redis, a timeout) go now if Redis still answers
        if (written !== null) await this.removeVersion(written).catch(() => {});
        throw err;
      });
    return {
      ref,
      commit: () =>
        this.conn.run(`publishing organization ${org}`, async () => {
          const old = Number(await this.conn.client.eval(SWITCH_SCRIPT, 1, snapKey(org, 'ptr'), String(ref.version)));
          if (old < 0) {
            await this.removeVersion(ref);
            throw new Error(
              `store: a newer snapshot (version ${-old}) of organization ${org} was published concurrently`,
            );
          }
          // after the pointer: a poller that sees the counter change lists the new pointer (a
          // signal only: a lost one is caught by the pollers' periodic full listing; its own key,
          // as a pointer is in its organization's slot on a cluster)
          await this.conn.client.incr(CHANGES_KEY).catch(() => {});
          // Best effort, as on the embedded store: the new version is published now, and a failed
          // clean-up must not say otherwise (an import exited 1 with its pointers moved: a review);
          // the next publish removes what is left.
          await this.removeOldVersions(org, ref.version, old).catch(() => {});
        }),
      discard: () => this.removeVersion(ref).catch(() => {}),
    };
  }

  // Keeps the current and previous versions, and newer ones (a concurrent publisher's, not switched yet).
  private async removeOldVersions(org: string, current: number, previous: number): Promise<void> {
    const versions = (await this.conn.client.zrangebyscore(snapKey(org, 'versions'), '-inf', `(${current}`)).map(
      Number,
    );
    for (const v of versions) if (v !== previous) await this.removeVersion({ organizationId: org, version: v });
  }

  /**
   * Removes every organization's versions newer than its pointer whose writer is gone (a killed
   * import's; its own organization's next publish removed them, an organization never published
   * again kept them for ever). A version still being written, or staged by a live import waiting
   * to switch its pointers, stays. 16 organizations at a time.
   */
  private async sweepAbandoned(): Promise<void> {
    const r = this.conn.client;
    const orgs = (await r.smembers('snap:orgs')).filter(isCanonicalOrganizationId);
    for (let i = 0; i < orgs.length; i += 16) {
      await Promise.all(
        orgs.slice(i, i + 16).map(async (org) => {
          const raw = await r.hget(snapKey(org, 'ptr'), 'version');
          const current = raw === null ? 0 : Number(raw);
          // an unreadable pointer cannot tell what is newer: its versions wait for its repair
          // (a pointer of -3 had every version taken for abandoned, the last good one included)
          if (raw !== null && !isVersion(current)) return;
          const newer = await r.zrangebyscore(snapKey(org, 'versions'), `(${current}`, '+inf');
          for (const v of newer.map(Number)) {
            const ref = { organizationId: org, version: v };
            if (abandoned(await r.hget(versionKey(ref), 'writer'))) await this.removeVersion(ref);
          }
        }),
      );
    }
  }

  /** One version's chunks and its entry in the organization's version list. */
  private async removeVersion(ref: SnapshotRef): Promise<void> {
    await this.conn.client.unlink(versionKey(ref));
    await this.conn.client.zrem(snapKey(ref.organizationId, 'versions'), String(ref.version));
  }

  /**
   * The counter every pointer move increments (see commit): listing 10,000 pointers took 150-330
   * ms of CPU and 10,000 commands, every second, on every replica.
   */
  changeToken(): Promise<string> {
    return this.conn.run('reading the change counter', async () => (await this.conn.client.get(CHANGES_KEY)) ?? 'none');
  }

  async latest(): Promise<SnapshotRef[]> {
    const { refs, unreadable } = await this.listLatest();
    if (unreadable.length > 0) throw new Error(unreadable[0].error);
    return refs;
  }

  async listLatest(): Promise<LatestListing> {
    return this.conn.run('listing snapshots', async () => {
      const orgs = await this.conn.client.smembers('snap:orgs');
      const out: LatestListing = { refs: [], unreadable: [] };
      if (orgs.length === 0) return out;
      // One command a pointer (each organization is its own slot on a cluster), sent together;
      // a failed one is kept apart so one organization's bad pointer does not fail the listing.
      const res = await Promise.all(
        orgs.map((org) =>
          this.conn.client.hget(snapKey(org, 'ptr'), 'version').then(
            (v) => [null, v] as const,
            (e: Error) => [e, null] as const,
          ),
        ),
      );
      orgs.forEach((org, i) => {
        const [err, v] = res[i];
        // One organization's bad pointer (wrong type, not a version) is reported apart (issue 13);
        // a connection error is every organization's and fails the listing.
        if (err && (this.conn.client.status !== 'ready' || !/WRONGTYPE/.test(err.message))) throw err;
        const version = err ? NaN : v === null || v === undefined ? null : Number(v);
        if (version === null) return;
        if (!isCanonicalOrganizationId(org)) return; // not ours, as the embedded store skips foreign folders
        if (!isVersion(version)) {
          const cause = err ? err.message : `bad version ${JSON.stringify(v)}`;
          out.unreadable.push({
            organizationId: org,
            error: `store: unreadable pointer of organization ${org}: ${cause}`,
          });
          return;
        }
        out.refs.push({ organizationId: org, version });
      });
      return out;
    });
  }

  async loadSnapshot(ref: SnapshotRef): Promise<OrgData> {
    return this.conn.run(`loading organization ${ref.organizationId} version ${ref.version}`, async () =>
      (await this.readSnapshot(ref)).finishData(),
    );
  }

  async loadFlatIndex(ref: SnapshotRef, options: LoadFlatOptions = {}): Promise<FlatIndex> {
    return (await this.loadChangedFlatIndex(ref, undefined, options))!;
  }

  async loadChangedFlatIndex(
    ref: SnapshotRef,
    unchanged: string | undefined,
    options: LoadFlatOptions = {},
  ): Promise<FlatIndex | null> {
    return this.conn.run(`loading organization ${ref.organizationId} version ${ref.version}`, async () =>
      (await this.readSnapshot(ref, { ...options, unchanged }, 'serve')).finishChanged(),
    );
  }

  private async readSnapshot(
    ref: SnapshotRef,
    options: LoadFlatOptions = {},
    purpose: DecodePurpose = 'export',
  ): Promise<SnapshotDecoder> {
    const key = versionKey(ref);
    const mbytes = await this.conn.client.hgetBuffer(key, 'manifest');
    if (mbytes === null)
      throw new Error(`store: no snapshot version ${ref.version} of organization ${ref.organizationId}`);
    const manifest = parseManifest(mbytes, ref);
    const decoder = new SnapshotDecoder(manifest, options, purpose);
    try {
      await this.readChunks(ref, key, manifest, decoder, purpose);
    } catch (err) {
      decoder.abandon();
      throw err;
    }
    return decoder;
  }

  /** Adds every chunk of `key` to `decoder`, in order. */
  private async readChunks(
    ref: SnapshotRef,
    key: string,
    manifest: Manifest,
    decoder: SnapshotDecoder,
    purpose: DecodePurpose,
  ): Promise<void> {
    // A sliding window: chunk i + WINDOW is asked for as chunk i is verified, so Redis sends
    // while this thread checks and copies (before, each batch of 8 waited for the last).
    const n = manifest.chunks.length;
    const missing = (i: number) =>
      new Error(`snapshot: chunk ${i} missing for organization ${ref.organizationId} version ${ref.version}`);
    // A server's load reads the chunks without a buffer per socket read (resp-hash-reader.ts:
    // 30-60 MiB less RSS at 1M); what it could not read comes through the client, below.
    let first = 0;
    const bytes = manifest.chunks.reduce((sum, c) => sum + c.length, 0);
    const target = purpose === 'serve' && bytes > DIRECT_MIN_BYTES ? this.conn.directTarget(key) : null;
    if (target !== null) {
      const fields = manifest.chunks.map((_, i) => String(i));
      const maxBytes = manifest.chunks.reduce((m, c) => Math.max(m, c.length), 0);
      const read = await readHashFields(target, {
        key,
        fields,
        maxBytes,
        window: WINDOW,
        onValue: (i, v) => {
          if (v === null) throw missing(i);
          decoder.add(i, v);
        },
      });
      // A Redis that did not answer in time would not answer the client either: the load fails
      // now, as through the client (not after a second timeout there).
      if (read.failure instanceof ReplyTimeout) throw new Error('Command timed out');
      first = read.delivered;
    }
    const pending: Array<Promise<Buffer | null> | null> = [];
    const ask = (i: number) => {
      const p = this.conn.client.hgetBuffer(key, String(i));
      p.catch(() => undefined); // awaited below in order; an early failure must not go unhandled
      pending[i] = p;
    };
    for (let i = first; i < Math.min(first + WINDOW, n); i++) ask(i);
    for (let i = first; i < n; i++) {
      const c = await pending[i];
      pending[i] = null;
      if (i + WINDOW < n) ask(i + WINDOW);
      if (c === null) throw missing(i);
      decoder.add(i, c);
    }
  }

  /** Raw access for tests that tamper with a stored snapshot: the hash key of one version. */
  versionKeyOf(ref: SnapshotRef): string {
    return versionKey(ref);
  }
}
