/**
 * Metrics.render: the process's series, then every organization's, which are rendered again only
 * when the catalog's statsVersion changed (a scrape of 2,000 organizations printed ~10,000 series);
 * catalogReloadStats lists the organizations only for those series.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Catalog } from '../../../src/catalog/catalog.js';
import { catalogReloadStats } from '../../../src/metrics/catalog-stats.js';
import { Metrics, type OrgStat } from '../../../src/metrics/metrics.js';

const line = (text: string, prefix: string) => text.split('\n').find((l) => l.startsWith(prefix));
/** The next turn of the event loop: a scrape reads the catalog once a turn (oncePerTurn), as each scrape is one. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

test("the organizations' series are rendered again when the version changes, not at every scrape", async () => {
  const stats: OrgStat[] = [{ organizationId: 'a', version: 1, messages: 5, contacts: 2 }];
  let version = 1;
  let reads = 0;
  const metrics = new Metrics(
    () => {
      reads++;
      return stats.map((s) => ({ ...s }));
    },
    () => version,
  );
  metrics.addReloadStats(() => ({
    loadsOk: version,
    loadsFailed: 0,
    lastReloadSeconds: null,
    byOrganization: [{ organizationId: 'a', ok: version, failed: 0 }],
    failing: [],
  }));
  metrics.record('public', 200, 0.001);
  const first = await metrics.render();
  assert.equal(line(first, 'index_messages{'), 'index_messages{organization_id="a"} 5');
  assert.equal(
    line(first, 'catalog_organization_snapshot_loads_total{organization_id="a",result="ok"}'),
    'catalog_organization_snapshot_loads_total{organization_id="a",result="ok"} 1',
  );
  assert.match(first, /^http_requests_total\{listener="public",status="200"\} 1$/m);
  assert.equal(first.match(/^# HELP index_messages /gm)?.length, 1);
  const readsAfterFirst = reads;
  // the same version: the same organizations' text, not read again; the process's series are fresh
  stats[0].messages = 6;
  metrics.record('public', 200, 0.001);
  await nextTurn();
  const second = await metrics.render();
  assert.equal(reads, readsAfterFirst);
  assert.equal(line(second, 'index_messages{'), 'index_messages{organization_id="a"} 5');
  assert.match(second, /^http_requests_total\{listener="public",status="200"\} 2$/m);
  // a load counted: rendered again
  version = 2;
  stats.push({ organizationId: 'b', version: 1, messages: 9, contacts: 1 });
  await nextTurn();
  const third = await metrics.render();
  assert.equal(line(third, 'index_messages{organization_id="a"}'), 'index_messages{organization_id="a"} 6');
  assert.equal(line(third, 'index_messages{organization_id="b"}'), 'index_messages{organization_id="b"} 9');
  assert.equal(
    line(third, 'catalog_organization_snapshot_loads_total{organization_id="a",result="ok"}'),
    'catalog_organization_snapshot_loads_total{organization_id="a",result="ok"} 2',
  );
});

test("without a version the organizations' series are read at every scrape", async () => {
  const stats: OrgStat[] = [{ organizationId: 'a', version: 1, messages: 5, contacts: 2 }];
  const metrics = new Metrics(() => stats.map((s) => ({ ...s })));
  assert.equal(line(await metrics.render(), 'index_messages{'), 'index_messages{organization_id="a"} 5');
  stats[0].messages = 7;
  await nextTurn();
  assert.equal(line(await metrics.render(), 'index_messages{'), 'index_messages{organization_id="a"} 7');
});

test('catalogReloadStats reads the totals without listing the organizations; the lists once, when read', () => {
  let listed = 0;
  const catalog = {
    loadTotals: () => ({ ok: 3, failed: 1, lastReloadSeconds: 0.5 }),
    stats: () => {
      listed++;
      return {
        loadsByOrganization: [{ organization_id: 'a', ok: 3, failed: 1 }],
        failures: [{ organization_id: 'a' }],
      };
    },
  } as unknown as Catalog;
  const r = catalogReloadStats(catalog);
  assert.deepEqual([r.loadsOk, r.loadsFailed, r.lastReloadSeconds], [3, 1, 0.5]);
  assert.equal(listed, 0, 'the totals alone list nothing');
  assert.deepEqual(r.byOrganization, [{ organizationId: 'a', ok: 3, failed: 1 }]);
  assert.deepEqual(r.failing, ['a']);
  assert.equal(listed, 1, 'both lists from one listing');
});
