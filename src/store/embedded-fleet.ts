/**
 * The registry of running servers in files under DATA_DIR (one host, or a shared folder):
 *
 *   servers/<id>.json                  one ServerEntry per running server, refreshed every second;
 *                                      kept past its expiry while its process is still on this
 *                                      host (suspended or hung: Fleet.lapsedServers)
 *
 * No broadcast: the reload CLI calls each server's admin URL.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isDir, lapsedButAlive, onThisHost, pidAlive, storeError as wrap, writeFileAtomic } from './file-utils.js';
import type { Fleet, ServerEntry } from './fleet.js';

const SERVER_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Server entries in `dataDir`/servers. */
export class EmbeddedFleet implements Fleet {
  readonly signals = null;
  private readonly dataDir: string;
  private readonly serversDir: string;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.serversDir = path.join(this.dataDir, 'servers');
  }

  async registerServer(entry: ServerEntry, ttlMs: number): Promise<void> {
    if (!SERVER_ID.test(entry.id)) throw new Error(`store: bad server id ${JSON.stringify(entry.id)}`);
    try {
      // Heartbeats are ephemeral: atomic (a reader never sees half) but not fsynced.
      const file = path.join(this.serversDir, `${entry.id}.json`);
      const body = JSON.stringify({ ...entry, ttlMs });
      try {
        await writeFileAtomic(file, body, false);
      } catch (err) {
        // DATA_DIR was unusable at start and came back without the folder: create it, once.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !(await isDir(this.dataDir))) throw err;
        await fs.mkdir(this.serversDir, { recursive: true });
        await writeFileAtomic(file, body, false);
      }
    } catch (err) {
      throw wrap('registering server', err);
    }
  }

  async unregisterServer(id: string): Promise<void> {
    if (SERVER_ID.test(id)) await fs.rm(path.join(this.serversDir, `${id}.json`), { force: true });
  }

  listServers(): Promise<ServerEntry[]> {
    return this.entries('live');
  }

  lapsedServers(): Promise<ServerEntry[]> {
    return this.entries('lapsed');
  }

  /**
   * The live entries, or the lapsed ones of this host (expired, process still there). An entry
   * whose process is gone from this host, or that expired on another host, is removed.
   */
  private async entries(which: 'live' | 'lapsed'): Promise<ServerEntry[]> {
    const out: ServerEntry[] = [];
    let names: string[];
    try {
      names = await fs.readdir(this.serversDir);
    } catch (err) {
      throw wrap('listing servers', err);
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(this.serversDir, name);
      let e: ServerEntry & { ttlMs: number };
      try {
        e = JSON.parse(await fs.readFile(file, 'utf8'));
      } catch {
        continue;
      }
      const expired = Date.now() - e.heartbeatAt > e.ttlMs;
      // gone: expired, unless lapsed with its process still here; or its process gone from here
      const gone = expired ? !lapsedButAlive(e) : onThisHost(e) && !pidAlive(e.pid);
      if (gone) {
        // (a read-only DATA_DIR: listed as gone all the same, removed by the next writer)
        await fs.rm(file, { force: true }).catch(() => {});
        continue;
      }
      // here, expired and alive: suspended or hung, kept for lapsedServers
      if (expired !== (which === 'lapsed')) continue;
      const { ttlMs: _ttl, ...entry } = e;
      out.push(entry);
    }
    return out;
  }
}
