/**
 * Snapshots in files under DATA_DIR, shared safely by several processes.
 *
 *   snapshots/<org>/v0000000007.snap   chunks, then the manifest, then a 12-byte footer
 *   snapshots/<org>/CURRENT            {"version":7,"previous":6}: the pointer readers follow
 *   snapshots/<org>/.lock              held while switching the pointer
 *
 * Publish: write the snapshot to a temp file, fsync, link() it to its version name (never
 * overwrites, so concurrent publishers get distinct versions), fsync the directory, then switch
 * CURRENT the same way under the lock. The previous version is kept; older ones are removed.
 */
import { randomBytes } from 'node:crypto';
import { close, closeSync, fstatSync, openSync, promises as fs, read, readFileSync, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import path from 'node:path';
import type { OrgData } from '../model/records.js';
import type { FlatIndex } from './flat-index.js';
import {
  encodeSnapshot,
  parseManifest,
  prepareSnapshot,
  SnapshotDecoder,
  type DecodePurpose,
  type PreparedSnapshot,
} from './snapshot-format.js';
import { deadTemp, fileStamp, isDir, storeError, syncDir, tempName, withLock, writeFileAtomic } from './file-utils.js';
import {
  isVersion,
  OlderFormatError,
  publishStaged,
  type LatestListing,
  type LoadFlatOptions,
  type PublishOptions,
  type SnapshotRef,
  type SnapshotStore,
  type StagedSnapshot,
} from './snapshot-store.js';
import { isCanonicalOrganizationId } from '../model/organization-id.js';
import { visibleText } from '../text/visible.js';

const VERSION_FILE = /^v(\d{10})\.snap$/;

/** The versions of the snapshot files among a folder's `names`. */
function versionsIn(names: readonly string[]): number[] {
  const out: number[] = [];
  for (const name of names) {
    const m = VERSION_FILE.exec(name);
    if (m) out.push(Number(m[1]));
  }
  return out;
}
const FOOTER_MAGIC = Buffer.from('CMSSNAP\n', 'ascii');
const FOOTER_SIZE = 12; // u32 BE manifest length + magic
const TEMP_MAX_AGE_MS = 24 * 3600_000;
/** pointers a listing reads before it lets the event loop go (~1 ms of reads on the machines measured) */
const POINTERS_A_TURN = 64;
/**
 * Snapshot files up to this size are read whole, synchronously (~0.1 ms for 1 MiB from the page
 * cache), instead of by asynchronous calls: a small organization's load was mostly the ~6 calls'
 * hand-offs to libuv's pool (~70-100 µs of this thread each on the machines measured). Larger
 * files are read a chunk a call, the event loop free between chunks.
 */
const WHOLE_READ_MAX_BYTES = 1 << 20;
const readAsync = promisify(read);
const closeAsync = promisify(close);

interface Pointer {
  version: number;
  previous: number | null;
  /** made at each publish (SnapshotRef.stamp); pointers written before it have none */
  stamp?: string;
}

/** A pointer's stamp: the time and 48 random bits, unique to one publish. */
function newStamp(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

/** Path of one version's file; exported for tests that tamper with snapshots. */
export function snapshotFile(dataDir: string, ref: SnapshotRef): string {
  return path.join(dataDir, 'snapshots', ref.organizationId, `v${String(ref.version).padStart(10, '0')}.snap`);
}

function wrap(what: string, err: unknown): Error {
  return err instanceof OlderFormatError ? err : storeError(what, err);
}

/** Snapshots under `dataDir`/snapshots (the folder is made by EmbeddedStore.open, or by the first publish). */
export class EmbeddedSnapshotStore implements SnapshotStore {
  readonly dataDir: string;
  private readonly snapDir: string;
  /** rewritten (a new inode) after every pointer move: see changeToken */
  private readonly changeFile: string;
  /** the one sweep of every folder's dead temps (sweepDeadTemps), started by the first publish */
  private swept: Promise<void> | undefined;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.snapDir = path.join(this.dataDir, 'snapshots');
    this.changeFile = path.join(this.snapDir, '.changed');
  }

  /**
   * A failed publish's error, naming DATA_DIR when the system's message names no path (ENOSPC
   * on a write said only "no space left on device, write": an operator audit).
   */
  private publishError(org: string, err: unknown): Error {
    const e = wrap(`publishing organization ${org}`, err);
    if (err instanceof OlderFormatError || e.message.includes(this.dataDir)) return e;
    return new Error(`${e.message} (DATA_DIR ${JSON.stringify(this.dataDir)})`);
  }

  publishSnapshot(data: OrgData, options: PublishOptions = {}): Promise<SnapshotRef> {
    return publishStaged(this, data, options);
  }

  async stageSnapshot(data: OrgData, options: PublishOptions = {}): Promise<StagedSnapshot> {
    const org = data.organizationId;
    if (!isCanonicalOrganizationId(org))
      throw new Error(`store: organization id must be a lower-case UUID, got ${JSON.stringify(org)}`);
    // Built once, before any file exists: a retry under a new version number only re-encodes.
    const prepared = prepareSnapshot(data, options.format, options.consumeText);
    const dir = path.join(this.snapDir, org);
    let version: number;
    try {
      await fs.mkdir(dir, { recursive: true });
      await this.removeDeadTemps(dir);
      // the others' are not this import's business to fail on: a folder it cannot clean stays as it was
      this.swept ??= this.sweepDeadTemps().catch(() => {});
      await this.swept;
      // an unreadable pointer (corrupt) is replaced by this publish: the version files say what exists
      const pointed = await this.readPointer(org).catch(() => null);
      version = Math.max(pointed?.version ?? 0, ...(await this.versionsOn(dir))) + 1;
      const tmp = tempName(dir);
      let linked = false;
      try {
        // Written inside the try: a failed write (disk full, I/O error) leaves no temp file behind.
        await this.writeSnapshotFile(tmp, prepared, version);
        // link() fails when the name exists, unlike rename(): a concurrent publisher keeps its version.
        for (;;) {
          try {
            await fs.link(tmp, snapshotFile(this.dataDir, { organizationId: org, version }));
            break;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
            version++;
            // The version number lives in the manifest too: rewrite for the new number.
            await this.writeSnapshotFile(tmp, prepared, version);
          }
        }
        linked = true;
        await syncDir(dir);
      } catch (err) {
        // no pointer can name our version file yet: it is garbage
        if (linked)
          await fs.rm(snapshotFile(this.dataDir, { organizationId: org, version }), { force: true }).catch(() => {});
        throw err;
      } finally {
        await fs.rm(tmp, { force: true }).catch(() => {});
      }
    } catch (err) {
      throw this.publishError(org, err);
    }
    // the stamp the pointer will carry, so the published ref is what a listing gives afterwards
    const stamp = newStamp();
    const ref: SnapshotRef = { organizationId: org, version, stamp };
    const file = snapshotFile(this.dataDir, ref);
    return {
      ref,
      commit: async () => {
        try {
          await withLock(
            path.join(dir, '.lock'),
            async () => {
              // an unreadable pointer is replaced (the import that repairs it; the listing names it)
              const cur = await this.readPointer(org).catch(() => null);
              if (cur !== null && cur.version >= version) {
                throw new Error(
                  `store: a newer snapshot (version ${cur.version}) of organization ${org} was published concurrently`,
                );
              }
              await writeFileAtomic(
                path.join(dir, 'CURRENT'),
                JSON.stringify({ version, previous: cur?.version ?? null, stamp } satisfies Pointer),
              );
              // after the pointer: a poller that sees the new token lists the new pointer (a signal
              // only, so not fsynced; a lost one is caught by the pollers' periodic full listing)
              await writeFileAtomic(this.changeFile, `${version} ${org}\n`, false).catch(() => {});
              // Best effort: the new version is published now, a failed clean-up must not say otherwise
              // (the next publish removes what is left).
              await this.removeOldVersions(dir, version, cur?.version ?? null).catch(() => {});
            },
            this.dataDir,
          );
        } catch (err) {
          // Our version file, when the pointer never came to name it, is garbage: remove it now
          // rather than at the next publish. (When the pointer did switch, e.g. only the directory
          // fsync failed afterwards, the file is live and stays.)
          const cur = await this.readPointer(org).catch(() => null);
          if (cur?.version !== version) await fs.rm(file, { force: true }).catch(() => {});
          throw this.publishError(org, err);
        }
      },
      discard: async () => {
        await fs.rm(file, { force: true }).catch(() => {});
        // the folder of an organization this import would have been the first to publish, now
        // empty: removed (an interrupted import of 3,000 new organizations left 2,621 of them).
        // rmdir removes only an empty folder: one with a pointer or a version stays.
        await fs.rmdir(dir).catch(() => {});
      },
    };
  }

  private async writeSnapshotFile(file: string, prepared: PreparedSnapshot, version: number): Promise<void> {
    const fh = await fs.open(file, 'w');
    try {
      // each chunk is written before the next is asked for: one buffer serves them all
      const enc = encodeSnapshot(prepared, version, 1);
      for (const chunk of enc.chunks) await fh.write(chunk);
      const manifest = enc.manifest();
      const footer = Buffer.alloc(FOOTER_SIZE);
      footer.writeUInt32BE(manifest.length, 0);
      FOOTER_MAGIC.copy(footer, 4);
      await fh.write(manifest);
      await fh.write(footer);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  private async versionsOn(dir: string): Promise<number[]> {
    return versionsIn(await fs.readdir(dir));
  }

  private async readPointer(org: string): Promise<Pointer | null> {
    try {
      // Read synchronously: a pointer is a few dozen bytes, and each asynchronous file call cost
      // the calling thread ~70-100 µs on the machines measured (handing it to libuv's pool and
      // being woken back), four of them a readFile: 0.6-0.75 s of a listing of 2,000 organizations.
      const p = JSON.parse(readFileSync(path.join(this.snapDir, org, 'CURRENT'), 'utf8')) as Pointer;
      if (!isVersion(p.version)) throw new Error(`bad version ${JSON.stringify(p.version)}`);
      return p;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new Error(`store: unreadable pointer of organization ${org}: ${visibleText((err as Error).message)}`);
    }
  }

  // Keeps the current and the previous version, and newer ones (a concurrent publisher's, not switched yet).
  private async removeOldVersions(dir: string, current: number, previous: number | null): Promise<void> {
    for (const v of await this.versionsOn(dir)) {
      if (v < current && v !== previous) {
        await fs.rm(snapshotFile(this.dataDir, { organizationId: path.basename(dir), version: v }), { force: true });
      }
    }
  }

  /**
   * Once per store opened for publishing: the dead temps of every organization, and of the
   * folders above them (the change marker's, keys.json's). A SIGKILLed import's half-written
   * snapshot (hundreds of MB at 1M) otherwise stayed until the next import of that same
   * organization, for ever if none came. Likewise a version file that a killed import had
   * written but never pointed to (stale versions, below).
   */
  private async sweepDeadTemps(): Promise<void> {
    await this.removeDeadTemps(this.dataDir);
    await this.removeDeadTemps(this.snapDir);
    const orgs = (await fs.readdir(this.snapDir)).filter(isCanonicalOrganizationId);
    // 16 listings at once: an import into 10,000 organizations takes 0.15 s more (one at a time: 0.3 s)
    for (let i = 0; i < orgs.length; i += 16) {
      await Promise.all(
        orgs.slice(i, i + 16).map(async (org) => {
          // one listing of the folder for both
          const names = await this.removeDeadTemps(path.join(this.snapDir, org));
          await this.removeStaleVersions(org, names);
        }),
      );
    }
  }

  /**
   * Version files above the organization's pointer (or of an organization without one) that are a
   * day old: an import killed after writing its version and before moving the pointer left them
   * (the next import of that organization removed them; one that never came, never). A running
   * import's are minutes old at most: every organization of an import is written, then every
   * pointer moves. A version the pointer names, or one below it, is never touched here; nor
   * anything when the pointer is unreadable (the import that repairs it decides).
   */
  private async removeStaleVersions(org: string, names: readonly string[]): Promise<void> {
    const versions = versionsIn(names);
    if (versions.length === 0) return;
    const pointer = await this.readPointer(org).catch(() => undefined);
    if (pointer === undefined) return;
    for (const v of versions) {
      if (pointer !== null && v <= pointer.version) continue;
      const file = snapshotFile(this.dataDir, { organizationId: org, version: v });
      const st = await fs.lstat(file).catch(() => null);
      if (st?.isFile() && Date.now() - st.mtimeMs > TEMP_MAX_AGE_MS) await fs.rm(file, { force: true });
    }
  }

  /**
   * Removes the dead temps in `dir` (leftovers of an import killed midway: its pid is gone, or
   * the file is a day old); resolves to the names the folder held (none if it is gone).
   */
  private async removeDeadTemps(dir: string): Promise<string[]> {
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch (err) {
      // an organization's folder removed meanwhile, or a file where a folder was expected
      if (['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw err;
    }
    for (const name of names) {
      if (!name.startsWith('.tmp-')) continue;
      const file = path.join(dir, name);
      const st = await fs.lstat(file).catch(() => null);
      // (a folder of that name is not ours: it stopped the clean-up of the rest, an audit found)
      if (st?.isFile() && deadTemp(name, st.mtimeMs, TEMP_MAX_AGE_MS)) await fs.rm(file, { force: true });
    }
    return names;
  }

  async latest(): Promise<SnapshotRef[]> {
    const { refs, unreadable } = await this.listLatest();
    if (unreadable.length > 0) throw new Error(unreadable[0].error);
    return refs;
  }

  async changeToken(): Promise<string> {
    try {
      return (await fileStamp(this.changeFile)) ?? 'none';
    } catch (err) {
      throw wrap('reading the change marker', err);
    }
  }

  async listLatest(): Promise<LatestListing> {
    let orgs: string[];
    try {
      orgs = await fs.readdir(this.snapDir);
    } catch (err) {
      // A data dir that exists but has no snapshots folder yet (created after a failed start) is empty.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (await isDir(this.dataDir)))
        return { refs: [], unreadable: [] };
      throw wrap('listing snapshots', err);
    }
    const out: LatestListing = { refs: [], unreadable: [] };
    let listed = 0;
    for (const org of orgs) {
      if (!isCanonicalOrganizationId(org)) continue;
      // the pointers are read synchronously (readPointer): the event loop is let go between batches
      if (++listed % POINTERS_A_TURN === 0) await yieldToOthers();
      try {
        const p = await this.readPointer(org);
        if (p)
          out.refs.push(
            typeof p.stamp === 'string'
              ? { organizationId: org, version: p.version, stamp: p.stamp }
              : { organizationId: org, version: p.version },
          );
      } catch (err) {
        // One organization's bad pointer must not hide the others (issue 13).
        out.unreadable.push({ organizationId: org, error: wrap(`organization ${org}`, err).message });
      }
    }
    return out;
  }

  async loadSnapshot(ref: SnapshotRef): Promise<OrgData> {
    const decoder = await this.readSnapshot(ref);
    try {
      return decoder.finishData();
    } catch (err) {
      throw wrap(`organization ${ref.organizationId} version ${ref.version}`, err);
    }
  }

  async loadFlatIndex(ref: SnapshotRef, options: LoadFlatOptions = {}): Promise<FlatIndex> {
    return (await this.loadChangedFlatIndex(ref, undefined, options))!;
  }

  async loadChangedFlatIndex(
    ref: SnapshotRef,
    unchanged: string | undefined,
    options: LoadFlatOptions = {},
  ): Promise<FlatIndex | null> {
    const decoder = await this.readSnapshot(ref, { ...options, unchanged }, 'serve');
    try {
      return decoder.finishChanged();
    } catch (err) {
      throw wrap(`organization ${ref.organizationId} version ${ref.version}`, err);
    }
  }

  private async readSnapshot(
    ref: SnapshotRef,
    options: LoadFlatOptions = {},
    purpose: DecodePurpose = 'export',
  ): Promise<SnapshotDecoder> {
    const file = snapshotFile(this.dataDir, ref);
    let source: SnapshotSource;
    try {
      source = openSnapshotSource(file);
    } catch (err) {
      throw wrap(`organization ${ref.organizationId} version ${ref.version}`, err);
    }
    let decoder: SnapshotDecoder | null = null;
    try {
      const size = source.size;
      const footer = await copyAt(source, size - FOOTER_SIZE, FOOTER_SIZE);
      if (size < FOOTER_SIZE || !footer.subarray(4).equals(FOOTER_MAGIC)) {
        throw new Error(
          `snapshot: truncated or foreign file for organization ${ref.organizationId} version ${ref.version}`,
        );
      }
      const manifestLength = footer.readUInt32BE(0);
      const manifestAt = size - FOOTER_SIZE - manifestLength;
      if (manifestAt < 0)
        throw new Error(`snapshot: bad footer for organization ${ref.organizationId} version ${ref.version}`);
      const manifest = parseManifest(await copyAt(source, manifestAt, manifestLength), ref);
      decoder = new SnapshotDecoder(manifest, options, purpose);
      let at = 0;
      for (let i = 0; i < manifest.chunks.length; i++) {
        const len = manifest.chunks[i].length;
        if (at + len > manifestAt)
          throw new Error(
            `snapshot: chunk ${i} runs past the data of organization ${ref.organizationId} version ${ref.version}`,
          );
        decoder.add(i, await source.chunk(at, len));
        at += len;
      }
      return decoder;
    } catch (err) {
      decoder?.abandon();
      throw wrap(`organization ${ref.organizationId} version ${ref.version}`, err);
    } finally {
      await source.close();
    }
  }
}

/** A snapshot file's bytes, read whole or a piece a call (see WHOLE_READ_MAX_BYTES). */
interface SnapshotSource {
  readonly size: number;
  /** `length` bytes at `position`, valid until the next call (the decoder copies what it keeps) */
  chunk(position: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** A copy of `length` bytes at `position`: zeros when there are none to read (a file shorter than its footer). */
async function copyAt(source: SnapshotSource, position: number, length: number): Promise<Buffer> {
  if (length <= 0 || position < 0) return Buffer.alloc(Math.max(0, length));
  return Buffer.from(await source.chunk(position, length));
}

function openSnapshotSource(file: string): SnapshotSource {
  const fd = openSync(file, 'r');
  let chunked = false;
  try {
    const size = fstatSync(fd).size;
    if (size > WHOLE_READ_MAX_BYTES) {
      chunked = true;
      return chunkedSource(fd, size);
    }
    const whole = Buffer.allocUnsafe(size);
    for (let at = 0; at < size; ) {
      const n = readSync(fd, whole, at, size - at, at);
      if (n === 0) throw shortRead(at, size, 0);
      at += n;
    }
    return wholeSource(whole);
  } finally {
    // (a chunked source reads on, and closes the descriptor with its close())
    if (!chunked) closeSync(fd);
  }
}

function shortRead(got: number, length: number, position: number): Error {
  return new Error(`snapshot: short read (${got} of ${length} bytes at ${position})`);
}

/** A small file, read whole already. */
function wholeSource(bytes: Buffer): SnapshotSource {
  return {
    size: bytes.length,
    async chunk(position, length) {
      if (position + length > bytes.length) throw shortRead(Math.max(0, bytes.length - position), length, position);
      return bytes.subarray(position, position + length);
    },
    async close() {},
  };
}

/** A large file, read a chunk a call on libuv's pool (this thread free meanwhile). */
function chunkedSource(fd: number, size: number): SnapshotSource {
  // One buffer reused for every chunk (the decoder copies what it keeps): a fresh 4 MiB
  // buffer a chunk was a whole snapshot of garbage that the C heap seldom gave back.
  let buf = Buffer.allocUnsafe(0);
  return {
    size,
    async chunk(position, length) {
      if (length > buf.length) buf = Buffer.allocUnsafe(length);
      const into = buf.subarray(0, length);
      const { bytesRead } = await readAsync(fd, into, 0, length, position);
      if (bytesRead !== length) throw shortRead(bytesRead, length, position);
      return into;
    },
    close: () => closeAsync(fd),
  };
}
