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
  await assert.rejects(publishImport(store, importData()), { message: /OOM$/ });
  assert.deepEqual(log, [`stage ${ORGS[0]}`, `stage ${ORGS[1]}`, `discard ${ORGS[0]}`, `discard ${ORGS[1]}`]);
});

test('a commit failure names what was published all the same (commits run a few at once)', async () => {
  const { store, log } = recordingStore({ commit: ORGS[1] });
  await assert.rejects(publishImport(store, importData()), {
    message: `store: redis publishing organization ${ORGS[1]}: timed out; published all the same: organization ${ORGS[0]} version 7, organization ${ORGS[2]} version 7`,
  });
  assert.deepEqual(log, [...ORGS.map((o) => `stage ${o}`), `commit ${ORGS[0]}`, `commit ${ORGS[2]}`]);
});

test('after a commit failure no further commit starts: the organizations not started are discarded', async () => {
  const orgs = Array.from({ length: 12 }, (_, i) => `${String(i + 1).padStart(8, '0')}-0000-4000-8000-000000000000`);
  const log: string[] = [];
  const store = {
    async stageSnapshot(data: { organizationId: string }): Promise<StagedSnapshot> {
      const org = data.organizationId;
      return {
        ref: { organizationId: org, version: 3 },
        async commit() {
          if (org === orgs[1]) throw new Error(`store: publishing organization ${org}: EIO`);
          await new Promise((resolve) => setImmediate(resolve));
          log.push(`commit ${org}`);
        },
        async discard() {
          log.push(`discard ${org}`);
        },
      };
    },
  } as unknown as SnapshotStore;
  const organizations = new Map<string, OrgDataBuilder>();
  for (const org of orgs) organizations.set(org, new OrgDataBuilder(org));
  const err = await publishImport(store, { organizations, contacts: 0, messages: 0 }).then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(err !== null);
  // eight in flight when the failure is seen: the seven others finish, the last four never start
  const committed = orgs.slice(0, 8).filter((_, i) => i !== 1);
  assert.equal(
    err.message,
    `store: publishing organization ${orgs[1]}: EIO; published all the same: ${committed.map((o) => `organization ${o} version 3`).join(', ')}`,
  );
  assert.deepEqual(log.filter((l) => l.startsWith('commit')).sort(), committed.map((o) => `commit ${o}`).sort());
  assert.deepEqual(
    log.filter((l) => l.startsWith('discard')).sort(),
    orgs
      .slice(8)
      .map((o) => `discard ${o}`)
      .sort(),
  );
});

test('a staging failure while others are writing: they finish, then all are discarded; no later one starts', async () => {
  const orgs = Array.from({ length: 12 }, (_, i) => `${String(i + 1).padStart(8, '0')}-0000-4000-8000-000000000000`);
  const log: string[] = [];
  const store = {
    async stageSnapshot(data: { organizationId: string }): Promise<StagedSnapshot> {
      const org = data.organizationId;
      log.push(`stage ${org}`);
      if (org === orgs[1]) throw new Error(`store: publishing organization ${org}: ENOSPC`);
      await new Promise((resolve) => setImmediate(resolve));
      log.push(`staged ${org}`);
      return {
        ref: { organizationId: org, version: 1 },
        async commit() {
          log.push(`commit ${org}`);
        },
        async discard() {
          log.push(`discard ${org}`);
        },
      };
    },
  } as unknown as SnapshotStore;
  const organizations = new Map<string, OrgDataBuilder>();
  for (const org of orgs) organizations.set(org, new OrgDataBuilder(org));
  await assert.rejects(publishImport(store, { organizations, contacts: 0, messages: 0 }), { message: /ENOSPC$/ });
  const written = orgs.slice(0, 8).filter((_, i) => i !== 1);
  assert.deepEqual(
    log.filter((l) => l.startsWith('stage ')),
    orgs.slice(0, 8).map((o) => `stage ${o}`),
    'eight stages in flight, none started after the failure',
  );
  assert.ok(!log.some((l) => l.startsWith('commit')));
  assert.deepEqual(log.filter((l) => l.startsWith('discard')).sort(), written.map((o) => `discard ${o}`).sort());
  // each discarded only once it had finished writing
  for (const o of written) assert.ok(log.indexOf(`staged ${o}`) < log.indexOf(`discard ${o}`), o);
});
