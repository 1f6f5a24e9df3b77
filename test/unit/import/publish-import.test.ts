/**
 * publishImport stages every organization before it commits any: a failure while staging
 * publishes nothing and discards what was staged; a failure among the commits names the
 * organizations already published and discards the rest. (The store's side, a full Redis, is
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

test('a commit failure names what was published before it and discards the rest', async () => {
  const { store, log } = recordingStore({ commit: ORGS[1] });
  await assert.rejects(publishImport(store, importData()), {
    message: `store: redis publishing organization ${ORGS[1]}: timed out; already published before it: organization ${ORGS[0]} version 7`,
  });
  assert.deepEqual(log, [...ORGS.map((o) => `stage ${o}`), `commit ${ORGS[0]}`, `discard ${ORGS[2]}`]);
});
