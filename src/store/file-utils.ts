/** Small file-system helpers for the embedded store: durable atomic writes and a cross-process lock. */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

/** fsync a directory, so a rename inside it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * A file's identity and version: inode, mtime and size, or null when it is not there. Files the
 * store rewrites are replaced by a rename (a new inode), so an equal stamp is the same content.
 */
export async function fileStamp(file: string): Promise<string | null> {
  try {
    const st = await fs.stat(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * A temp name beside `target` that names this process (its pid, and writerPlace()), so a crashed
 * writer's leftovers can be recognised (deadTemp).
 */
export function tempName(dir: string): string {
  return path.join(dir, `.tmp-${process.pid}-${writerPlace()}-${Math.random().toString(36).slice(2, 10)}`);
}

/**
 * Where this process's pid means something, as 8 hex digits: its hostname and PID namespace (what
 * onThisHost compares), hashed; "x" without /proc. Two hosts sharing a disk both have the same
 * initial namespace number, so the namespace alone would not do.
 */
export function writerPlace(): string {
  const ns = pidNamespace();
  if (ns === null) return 'x';
  ownPlace ??= createHash('sha256').update(`${hostname()} ${ns}`).digest('hex').slice(0, 8);
  return ownPlace;
}
let ownPlace: string | undefined;

/**
 * Whether temp file `name` (tempName) was left by a writer that is gone: its pid is dead on this
 * host in this PID namespace, or it is older than `maxAgeMs`. A writer elsewhere (a container
 * sharing the volume, another host on a shared disk) or of a name without a place (older code)
 * is judged by age only: its pid says nothing here (the reload audit: a host import removed a
 * container import's file as it wrote it).
 */
export function deadTemp(name: string, mtimeMs: number, maxAgeMs: number): boolean {
  const m = /^\.tmp-(\d+)-([0-9a-f]{8}|x)-[0-9a-z]+$/.exec(name);
  if (Date.now() - mtimeMs > maxAgeMs) return /^\.tmp-\d+-/.test(name);
  return m !== null && m[2] !== 'x' && m[2] === writerPlace() && !pidAlive(Number(m[1]));
}

/** Writes `data` to `file` atomically: temp file, fsync, rename, fsync of the directory (unless `durable` is false). */
export async function writeFileAtomic(file: string, data: string | Uint8Array, durable = true): Promise<void> {
  const dir = path.dirname(file);
  const tmp = tempName(dir);
  try {
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(data);
      if (durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    // Disk full or an I/O error: `file` is untouched, and no half-written temp file stays behind.
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  if (durable) await syncDir(dir);
}

/**
 * True when `pid` is a live process on this host (EPERM means alive but not ours). A process that
 * was killed and that its parent has not reaped yet keeps its pid as a zombie: not alive.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** This process's PID namespace (`pid:[N]`), or null without /proc. Read once. */
export function pidNamespace(): string | null {
  if (ownPidNamespace === undefined) {
    try {
      ownPidNamespace = readlinkSync('/proc/self/ns/pid');
    } catch {
      ownPidNamespace = null;
    }
  }
  return ownPidNamespace;
}
let ownPidNamespace: string | null | undefined;

/**
 * Whether a registry entry's pid can be checked from here: the same hostname and the same PID
 * namespace. A container with the host's hostname (host networking) has pids of its own, and an
 * entry without the field (an older server) cannot be told apart: both count as another host's,
 * known stopped only once their entry expires.
 */
export function onThisHost(e: { hostname: string; pidNamespace?: string | null }): boolean {
  const ns = pidNamespace();
  return e.hostname === hostname() && ns !== null && e.pidNamespace === ns;
}

/**
 * True when `pid` is alive on this host and is the process that registered at `startedAt` (ISO),
 * not a later one given the same pid: it started no later than that (+2 s: /proc's boot time is
 * in whole seconds). Without /proc, pidAlive alone.
 */
export function sameProcessAlive(pid: number, startedAt: string): boolean {
  if (!pidAlive(pid)) return false;
  const fields = procStat(pid);
  if (fields === null) return true;
  try {
    // starttime (clock ticks since boot) is field 22 of /proc/PID/stat
    const ticks = Number(fields[22 - 3]);
    const boot = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'));
    if (!Number.isFinite(ticks) || boot === null) return true;
    // USER_HZ is 100 on every Linux build Node supports
    const startMs = Number(boot[1]) * 1000 + ticks * 10;
    const registered = Date.parse(startedAt);
    return !Number.isFinite(registered) || startMs <= registered + 2000;
  } catch {
    return true;
  }
}

/** An expired registry entry whose process is still there, checkably: this host, same process. */
export function lapsedButAlive(e: {
  hostname: string;
  pidNamespace?: string | null;
  pid: number;
  startedAt: string;
}): boolean {
  return onThisHost(e) && sameProcessAlive(e.pid, e.startedAt);
}

/** Whether process `pid` is stopped by a signal (SIGSTOP, SIGTSTP; state T or t in /proc/PID/stat). */
export function processStopped(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state === 'T' || state === 't';
}

/**
 * The fields of /proc/PID/stat after "pid (comm)", from the state (field 3) on, or null (no
 * /proc, or the process is gone). comm may hold spaces and parentheses: the state follows the
 * last ')'.
 */
function procStat(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Whether process `pid` has exited and awaits its parent's wait (state Z or X in /proc/PID/stat). */
function isZombie(pid: number): boolean {
  // no /proc (not Linux), or the process went meanwhile: not a zombie, the next check tells
  const state = procStat(pid)?.[0];
  return state === 'Z' || state === 'X';
}

const LOCK_STALE_MS = 30_000;
const LOCK_WAIT_MS = 15_000;
/** A lock file still empty this long after it was made will never name its owner. */
const EMPTY_LOCK_STALE_MS = 1_000;
/** A breaker lock (see breakIfStale) is held for a few file calls: one this old was left by a process killed holding it. */
const BREAKER_STALE_MS = 5_000;
/** How long a release waits for the breaker lock before it removes its own lock without it. */
const BREAKER_WAIT_MS = 2_000;

/**
 * Runs `fn` holding an exclusive lock file (O_EXCL create) shared by every process using the
 * folder. A lock left by a dead process (or older than 30 s: holders only do short work) is broken,
 * and only under breakIfStale's rules, so that a lock is never removed by anyone but its owner
 * once it is live.
 */
export async function withLock<T>(lockFile: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  // a token of its own: a later lock of the same process (or of a reused PID) is not this one
  const owner = `${hostname()} ${process.pid} ${randomBytes(6).toString('hex')}`;
  let acquiredAt: number;
  for (;;) {
    try {
      const fh = await fs.open(lockFile, 'wx');
      try {
        await fh.writeFile(owner);
      } catch (err) {
        // e.g. ENOSPC: the lock is ours but names no owner; left behind, it held every later
        // writer up to LOCK_WAIT_MS and then failed it (a full disk, freed, still blocked keys)
        await fh.close().catch(() => undefined);
        await fs.rm(lockFile, { force: true });
        throw err;
      }
      await fh.close();
      acquiredAt = Date.now();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (await breakIfStale(lockFile)) continue;
      if (Date.now() > deadline) throw new Error(`store: timed out waiting for lock ${lockFile}`);
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 20));
    }
  }
  try {
    return await fn();
  } finally {
    await releaseLock(lockFile, owner, acquiredAt);
  }
}

/**
 * Removes `lockFile` if it is stale; whether it did. The decision is made again, and the lock
 * removed, under a second lock (`.break`) that every breaker and every late release takes: a
 * stale lock (its owner dead, or past 30 s) then cannot change between the two, so no live lock
 * is removed. Before, a lock read as "host pid", whose owner released it and exited before the
 * PID was checked, was judged stale after another process had taken the lock anew, and that new
 * lock was removed: two writers read-modified-wrote keys.json at once, and 20 concurrent
 * `keys revoke` lost up to 6 revocations, each printed as done (a review).
 */
async function breakIfStale(lockFile: string): Promise<boolean> {
  if (!(await lockIsStale(lockFile))) return false;
  const broke = await underBreaker(lockFile, 0, async () => {
    if (!(await lockIsStale(lockFile))) return false;
    await fs.rm(lockFile, { force: true });
    return true;
  });
  return broke === true;
}

/**
 * Removes this process's lock (`owner` its content). A lock held for less than LOCK_STALE_MS
 * (with a margin) is this one: no breaker judges it stale (its PID is alive), so it goes at once.
 * One held longer may have been broken and taken by another: removed only if it is still ours,
 * under the breaker lock.
 */
async function releaseLock(lockFile: string, owner: string, acquiredAt: number): Promise<void> {
  if (Date.now() - acquiredAt < LOCK_STALE_MS - 5_000) {
    await fs.rm(lockFile, { force: true });
    return;
  }
  const removeOwn = async () => {
    if ((await fs.readFile(lockFile, 'utf8').catch(() => null)) === owner) await fs.rm(lockFile, { force: true });
  };
  // (without the breaker lock after the wait: a lock of ours left behind would hold every writer 30 s)
  const done = await underBreaker(lockFile, BREAKER_WAIT_MS, async () => {
    await removeOwn();
    return true;
  });
  if (done === null) await removeOwn();
}

/** Runs `fn` holding `${lockFile}.break`, waiting up to `waitMs` for it; null when not had. */
async function underBreaker<T>(lockFile: string, waitMs: number, fn: () => Promise<T>): Promise<T | null> {
  const breaker = `${lockFile}.break`;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await (await fs.open(breaker, 'wx')).close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const st = await fs.stat(breaker).catch(() => null);
      if (st !== null && Date.now() - st.mtimeMs > BREAKER_STALE_MS) {
        await fs.rm(breaker, { force: true });
        continue;
      }
      if (Date.now() >= deadline) return null;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 10));
    }
  }
  try {
    return await fn();
  } finally {
    await fs.rm(breaker, { force: true });
  }
}

async function lockIsStale(lockFile: string): Promise<boolean> {
  try {
    const [st, text] = await Promise.all([fs.stat(lockFile), fs.readFile(lockFile, 'utf8')]);
    if (Date.now() - st.mtimeMs > LOCK_STALE_MS) return true;
    // no owner written a second after it was made: its maker died or failed between the two
    if (text === '') return Date.now() - st.mtimeMs > EMPTY_LOCK_STALE_MS;
    const [host, pid] = text.split(' ');
    return host === hostname() && pid !== undefined && !pidAlive(Number(pid));
  } catch {
    return false; // vanished or being written: try again
  }
}

/** A "store: <what>: <cause>" error, unless the cause already names its module. */
export function storeError(what: string, err: unknown): Error {
  const msg = (err as Error).message ?? String(err);
  return new Error(msg.startsWith('store:') || msg.startsWith('snapshot:') ? msg : `store: ${what}: ${msg}`);
}

/** Whether `p` is an existing folder. */
export async function isDir(p: string): Promise<boolean> {
  return (await fs.stat(p).catch(() => null))?.isDirectory() ?? false;
}
