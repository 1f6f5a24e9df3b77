/**
 * publishImport stages every organization before it commits any: a failure while staging
 * publishes nothing and discards what was staged; a failure among the commits (a few run at
 * once) starts no further one, names the organizations published all the same and discards the
 * rest. (The store's side, a full Redis, is
 * test/e2e/import.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { publishImport, type ImportData } from '../../../src/import/importer.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import type { SnapshotStore, StagedSnapshot } from '../../../src/store/snapshot-store.js';

const ORGS = [
  '00000001-0000-4000-8000-000000000000',
  '00000002-0000-4000-8000-000000000000',
  '00000003-0000-4000-8000-000000000000',
];

function importData(): ImportData {
  const organizations = new Map<string, OrgDataBuilder>();
  for (const org of ORGS) organizations.set(org, new OrgDataBuilder(org));
  return { organizations, contacts: 0, messages: 0 };
}

/** A store that records what happens, failing the staging or the commit of one organization. */
function recordingStore(fail: { stage?: string; commit?: string }): { store: SnapshotStore; log: string[] } {
  const log: string[] = [];
  const store = {
    async stageSnapshot(data: { organizationId: string }): Promise<StagedSnapshot> {
      const org = data.organizationId;
      if (org === fail.stage) throw new Error(`store: redis publishing organization ${org}: OOM`);
      log.push(`stage ${org}`);
      return {
        ref: { organizationId: org, version: 7 },
        async commit() {
          if (org === fail.commit) throw new Error(`store: redis publishing organization ${org}: timed out`);
          log.push(`commit ${org}`);
        },
        async discard() {
          log.push(`discard ${org}`);
        },
      };
    },
  } as unknown as SnapshotStore;
  return { store, log };
}

test('every organization staged, then every one committed', async () => {
  const { store, log } = recordingStore({});
  const out = await publishImport(store, importData());
  assert.deepEqual(
    out.map((o) => o.organization_id),
    ORGS,
  );
  assert.deepEqual(log, [...ORGS.map((o) => `stage ${o}`), ...ORGS.map((o) => `commit ${o}`)]);
});

test('a staging failure publishes nothing and discards what was staged', async () => {
  const { store, log } = recordingStore({ stage: ORGS[2] });
  // (saying so: the store's message alone left an operator to guess)
  await assert.rejects(publishImport(store, importData()), {
    message: /OOM; nothing was published, and what was staged was removed$/,
  });
  assert.deepEqual(log, [`stage ${ORGS[0]}`, `stage ${ORGS[1]}`, `discard ${ORGS[0]}`, `discard ${ORGS[1]}`]);
});

test('a commit failure names what was published all the same (commits run a few at once)', async () => {
  const { store, log } = recordingStore({ commit: ORGS[1] });
  await assert.rejects(publishImport(store, importData()), {
    message: `store: redis publishing organization ${ORGS[1]}: timed out; published all the same: organization ${ORGS[0]} version 7, organization ${ORGS[2]} version 7`,
  });
  assert.deepEqual(log, [...ORGS.map((o) => `stage ${o}`), `commit ${ORGS[0]}`, `commit ${ORGS[2]}`]);
});

const TWELVE = Array.from({ length: 12 }, (_, i) => `${String(i + 1).padStart(8, '0')}-0000-4000-8000-000000000000`);

function importOf(orgs: string[]): ImportData {
  const organizations = new Map<string, OrgDataBuilder>();
  for (const org of orgs) organizations.set(org, new OrgDataBuilder(org));
  return { organizations, contacts: 0, messages: 0 };
}

/** A store whose stages and commits each take a turn of the event loop; one organization's stage or commit fails at once. */
function slowStore(fail: { stage?: string; commit?: string }): { store: SnapshotStore; log: string[] } {
  const log: string[] = [];
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const store = {
    async stageSnapshot(data: { organizationId: string }): Promise<StagedSnapshot> {
      const org = data.organizationId;
      log.push(`stage ${org}`);
      if (org === fail.stage) throw new Error(`store: publishing organization ${org}: ENOSPC`);
      await turn();
      log.push(`staged ${org}`);
      return {
        ref: { organizationId: org, version: 3 },
        async commit() {
          if (org === fail.commit) throw new Error(`store: publishing organization ${org}: EIO`);
          await turn();
          log.push(`commit ${org}`);
        },
        async discard() {
          log.push(`discard ${org}`);
        },
      };
    },
  } as unknown as SnapshotStore;
  return { store, log };
}

const sortedOf = (log: string[], kind: string) => log.filter((l) => l.startsWith(`${kind} `)).sort();

test('after a commit failure no further commit starts: the organizations not started are discarded', async () => {
  const { store, log } = slowStore({ commit: TWELVE[1] });
  const err = await publishImport(store, importOf(TWELVE)).then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(err !== null);
  // eight in flight when the failure is seen: the seven others finish, the last four never start
  const committed = TWELVE.slice(0, 8).filter((_, i) => i !== 1);
  assert.equal(
    err.message,
    `store: publishing organization ${TWELVE[1]}: EIO; published all the same: ${committed.map((o) => `organization ${o} version 3`).join(', ')}`,
  );
  assert.deepEqual(sortedOf(log, 'commit'), committed.map((o) => `commit ${o}`).sort());
  assert.deepEqual(
    sortedOf(log, 'discard'),
    TWELVE.slice(8)
      .map((o) => `discard ${o}`)
      .sort(),
  );
});

test('a staging failure while others are writing: they finish, then all are discarded; no later one starts', async () => {
  const { store, log } = slowStore({ stage: TWELVE[1] });
  await assert.rejects(publishImport(store, importOf(TWELVE)), {
    message: /ENOSPC; nothing was published, and what was staged was removed$/,
  });
  const written = TWELVE.slice(0, 8).filter((_, i) => i !== 1);
  assert.deepEqual(
    log.filter((l) => l.startsWith('stage ')),
    TWELVE.slice(0, 8).map((o) => `stage ${o}`),
    'eight stages in flight, none started after the failure',
  );
  assert.deepEqual(sortedOf(log, 'commit'), []);
  assert.deepEqual(sortedOf(log, 'discard'), written.map((o) => `discard ${o}`).sort());
  // each discarded only once it had finished writing
  for (const o of written) assert.ok(log.indexOf(`staged ${o}`) < log.indexOf(`discard ${o}`), o);
});
