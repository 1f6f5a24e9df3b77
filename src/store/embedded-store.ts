/**
 * The embedded store: plain files under DATA_DIR, shared safely by several processes; no Redis.
 * Snapshots (embedded-snapshot-store.ts), keys (embedded-key-store.ts) and the server registry
 * (embedded-fleet.ts) each keep their own files in the one folder.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { EmbeddedFleet } from './embedded-fleet.js';
import { EmbeddedKeyStore } from './embedded-key-store.js';
import { EmbeddedSnapshotStore } from './embedded-snapshot-store.js';
import type { StoreAccess, Stores } from './stores.js';

export { snapshotFile } from './embedded-snapshot-store.js';

/** The three stores over files in `dataDir` (created when missing by `open`). */
export class EmbeddedStore implements Stores {
  readonly kind = 'embedded' as const;
  readonly dataDir: string;
  readonly snapshots: EmbeddedSnapshotStore;
  readonly keys: EmbeddedKeyStore;
  readonly fleet: EmbeddedFleet;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.snapshots = new EmbeddedSnapshotStore(this.dataDir);
    this.keys = new EmbeddedKeyStore(this.dataDir);
    this.fleet = new EmbeddedFleet(this.dataDir);
  }

  /**
   * Creates the folders; fails clearly when DATA_DIR cannot be used. `access` 'read' (the tools
   * that only list: `snapshot list`, `keys list`, `reload`) also takes a DATA_DIR that cannot be
   * written (a read-only mount) whose folders are there and readable.
   */
  async open(access: StoreAccess = 'write'): Promise<this> {
    try {
      await fs.mkdir(path.join(this.dataDir, 'snapshots'), { recursive: true });
      await fs.mkdir(path.join(this.dataDir, 'servers'), { recursive: true });
      await fs.access(this.dataDir, fs.constants.W_OK);
    } catch (err) {
      if (access === 'read' && (await this.readable())) return this;
      throw new Error(`store: cannot use DATA_DIR ${JSON.stringify(this.dataDir)}: ${(err as Error).message}`);
    }
    return this;
  }

  /** Whether DATA_DIR and its folders are there and can be read. */
  private async readable(): Promise<boolean> {
    try {
      for (const dir of [this.dataDir, path.join(this.dataDir, 'snapshots'), path.join(this.dataDir, 'servers')])
        await fs.access(dir, fs.constants.R_OK | fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {}
}
