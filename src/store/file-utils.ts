/** Small file-system helpers for the embedded store: durable atomic writes and a cross-process lock. */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
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
 * folder. A lock left by a dead process (or older than 30 s: holders only do short work) is
 * broken, under breakIfStale's rules, so that a live lock is not removed by anyone but its owner.
 */
export async function withLock<T>(lockFile: string, fn: () => Promise<T>, root?: string): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  // the processes of this host first take turns on a socket name (hostMutex): the file lock, and
  // the breaking of a stale one, then see one of them at a time
  const leave = await hostMutex(lockFile, deadline, root ?? path.dirname(lockFile));
  try {
    return await withFileLock(lockFile, deadline, fn);
  } finally {
    await leave();
  }
}

/**
 * A mutex among the processes of this host (of one network namespace: one container) named after
 * `lockFile`: a Linux abstract Unix socket that one process at a time can listen on, which the
 * kernel lets go when that process ends however it ends, so it is never stale (a stopped holder
 * is waited for: it may run again). The file lock beneath it still orders processes it does not
 * reach (other hosts or containers sharing the folder). Resolves to its release. A no-op where
 * there are no abstract sockets (not Linux) or `root`'s secret cannot be had (mutexSecret).
 * Why: 60 processes breaking the file lock left by a killed holder could still, in rare
 * interleavings of their renames, each think it held it (a review lost up to 18 of 60 keys).
 */
async function hostMutex(lockFile: string, deadline: number, root: string): Promise<() => Promise<void>> {
  if (process.platform !== 'linux') return async () => undefined;
  const secret = await mutexSecret(root);
  if (secret === null) return async () => undefined;
  let where: string;
  try {
    where = path.join(await fs.realpath(path.dirname(lockFile)), path.basename(lockFile));
  } catch {
    where = path.resolve(lockFile);
  }
  const digest = createHash('sha256').update(`${secret} ${where}`).digest('hex');
  const name = `\0contact-message-search-lock-${digest.slice(0, 40)}`;
  for (;;) {
    const server = net.createServer((socket) => socket.destroy());
    const listened = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
      server.once('error', resolve);
      server.listen({ path: name, exclusive: true }, () => resolve(null));
    });
    if (listened === null) {
      server.unref();
      // (no one has a reason to connect; one that does is sent away at once, so the close's
      // callback, which waits for every connection, does not wait on a stranger: an audit)
      return () => new Promise<void>((resolve) => server.close(() => resolve()));
    }
    server.close();
    if (listened.code !== 'EADDRINUSE') return async () => undefined; // no abstract sockets here
    if (Date.now() > deadline) throw new Error(await heldMessage(lockFile));
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 10));
  }
}

/** The timeout's message: which process of this host holds the lock, as its file says. */
async function heldMessage(lockFile: string): Promise<string> {
  const text = await fs.readFile(lockFile, 'utf8').catch(() => null);
  const [host, pid] = text?.split(' ') ?? [];
  const who =
    host === hostname() && pid !== undefined && /^\d+$/.test(pid)
      ? `process ${pid} of this host holds it${processStopped(Number(pid)) ? ' and is stopped (SIGSTOP): it holds it until it runs again or ends' : ''}`
      : 'another process of this host holds it';
  return `store: timed out waiting for lock ${lockFile}: ${who} (removing the lock file does not free it)`;
}

/**
 * The secret in the socket's name: 32 random bytes in `<root>/.lock-secret`, readable by the
 * store's owner only (0600), made by the first writer. Abstract sockets have no permissions: a
 * name any user could work out from the path alone let any local user block every writer (an
 * audit); now only a user who can read the store's own secret can. Null (no mutex, the file lock
 * alone) when it can be neither read nor made.
 */
async function mutexSecret(root: string): Promise<string | null> {
  const file = path.join(root, '.lock-secret');
  const cached = secrets.get(file);
  if (cached !== undefined) return cached;
  let secret: string | null = await fs.readFile(file, 'utf8').catch(() => null);
  if (secret === null || secret.length === 0) {
    try {
      // made whole as a lock is (never seen empty); two makers at once keep the first
      await createLock(file, randomBytes(32).toString('hex'), 0o600).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      secret = await fs.readFile(file, 'utf8');
    } catch {
      secret = null;
    }
  }
  if (secret !== null && secret.length > 0) secrets.set(file, secret);
  return secret !== null && secret.length > 0 ? secret : null;
}
const secrets = new Map<string, string>();

/** withLock's file lock, taken by `deadline`. */
async function withFileLock<T>(lockFile: string, deadline: number, fn: () => Promise<T>): Promise<T> {
  let acquiredAt: number;
  let owner: string;
  for (;;) {
    owner = ownerToken();
    try {
      await createLock(lockFile, owner);
      acquiredAt = Date.now();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (await breakIfStale(lockFile, LOCK_STALE_MS)) continue;
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
 * "host pid token": the token is this acquisition's own, so that a lock read twice with the same
 * content is the same acquisition (another one of the same process, or of a reused PID, is not).
 */
function ownerToken(): string {
  return `${hostname()} ${process.pid} ${randomBytes(6).toString('hex')}`;
}

/**
 * Creates `file` holding `owner`, with permissions `mode` (the mutex secret's are 0600), or fails
 * with EEXIST when it exists. The content is written to a file of its own first, then linked into
 * place: a lock is never seen empty, so no live one can pass for a dead maker's empty lock (a new
 * breaker, still empty, was removed as the stale one it replaced: a review).
 */
async function createLock(file: string, owner: string, mode = 0o644): Promise<void> {
  // (a temp name: the store's sweep removes one its writer, killed, left behind)
  const made = tempName(path.dirname(file));
  try {
    const fh = await fs.open(made, 'wx', mode);
    try {
      await fh.writeFile(owner);
    } finally {
      await fh.close();
    }
    await fs.link(made, file);
  } finally {
    // (e.g. ENOSPC writing the owner: nothing is left behind, and the lock was never there)
    await fs.rm(made, { force: true });
  }
}

/**
 * Removes `lockFile` if it is stale (staleContent); whether it did. The decision is made again,
 * and the lock removed, holding a second lock (`<lock>.break`, itself broken the same way when
 * stale) so that breakers do not race each other; and a lock is removed only while it still holds
 * what was judged stale (staleContent reads it twice, removeIfStill checks it moved aside).
 * Before (a review): a lock read as "host
 * pid", whose owner released it and exited before the PID was checked, was judged stale after
 * another process had taken the lock anew, and that new lock was removed: two writers
 * read-modified-wrote keys.json at once, and 100 concurrent `keys create` stored 35 of their keys.
 */
async function breakIfStale(lockFile: string, staleMs: number): Promise<boolean> {
  if ((await staleContent(lockFile, staleMs)) === null) return false;
  const broke = await underBreaker(lockFile, 0, async () => {
    const judged = await staleContent(lockFile, staleMs);
    return judged !== null && (await removeIfStill(lockFile, judged));
  });
  return broke === true;
}

/**
 * The content of `file` when it is a stale lock, else null: its owner on this host is dead (and
 * the file still holds what was read before the PID was checked: an owner that released it and
 * exited meanwhile left the path to a new owner), it is older than `staleMs`, or it has stayed
 * empty past EMPTY_LOCK_STALE_MS (its maker died between creating and writing it).
 */
async function staleContent(file: string, staleMs: number): Promise<string | null> {
  try {
    const [st, text] = await Promise.all([fs.stat(file), fs.readFile(file, 'utf8')]);
    if (Date.now() - st.mtimeMs > staleMs) return text;
    if (text === '') return Date.now() - st.mtimeMs > EMPTY_LOCK_STALE_MS ? text : null;
    const [host, pid] = text.split(' ');
    if (host !== hostname() || pid === undefined || pidAlive(Number(pid))) return null;
    return (await fs.readFile(file, 'utf8')) === text ? text : null;
  } catch {
    return null; // vanished or being written: try again
  }
}

/**
 * Removes `file` if it still holds `content`: it is moved aside first and its content checked
 * there, so a lock made at that path after the judgement (a new owner's) is put back, not
 * removed. Whether it removed it.
 */
async function removeIfStill(file: string, content: string): Promise<boolean> {
  const aside = tempName(path.dirname(file));
  try {
    await fs.rename(file, aside);
  } catch {
    return false; // gone already
  }
  const moved = await fs.readFile(aside, 'utf8').catch(() => null);
  if (moved !== content) {
    // a live lock: back where it was (unless yet another was made in these few microseconds)
    await fs.link(aside, file).catch(() => undefined);
    await fs.rm(aside, { force: true });
    return false;
  }
  await fs.rm(aside, { force: true });
  return true;
}

/**
 * Removes this process's lock (`owner` its content). A lock held for less than LOCK_STALE_MS
 * (with a margin) is this one: no breaker judges it stale (its PID is alive), so it goes at once.
 * One held longer may have been broken and taken by another: removed only if it still holds
 * `owner`, under the breaker lock.
 */
async function releaseLock(lockFile: string, owner: string, acquiredAt: number): Promise<void> {
  if (Date.now() - acquiredAt < LOCK_STALE_MS - 5_000) {
    await fs.rm(lockFile, { force: true });
    return;
  }
  const done = await underBreaker(lockFile, BREAKER_WAIT_MS, () => removeIfStill(lockFile, owner));
  // (without the breaker lock after the wait: a lock of ours left behind would hold every writer 30 s)
  if (done === null) await removeIfStill(lockFile, owner);
}

/**
 * Runs `fn` holding `${lockFile}.break` (an owner token like a lock's), waiting up to `waitMs`
 * for it; null when not had. One left by a dead process, or older than BREAKER_STALE_MS, is
 * broken as a lock is (its content checked again before it goes): a stale breaker that several
 * processes removed at once let many break the lock together (a review).
 */
async function underBreaker<T>(lockFile: string, waitMs: number, fn: () => Promise<T>): Promise<T | null> {
  const breaker = `${lockFile}.break`;
  const deadline = Date.now() + waitMs;
  let owner: string;
  for (;;) {
    owner = ownerToken();
    try {
      await createLock(breaker, owner);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const judged = await staleContent(breaker, BREAKER_STALE_MS);
      if (judged !== null && (await removeIfStill(breaker, judged))) continue;
      if (Date.now() >= deadline) return null;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 10));
    }
  }
  try {
    return await fn();
  } finally {
    await removeIfStill(breaker, owner);
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
