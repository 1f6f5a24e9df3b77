import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reloadSummaryText } from '../../../src/cli/reload-summary.js';

const org = (i: number) => ({
  organization_id: `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  version: 2,
});

test('a server line names at most 10 reloaded organizations, then how many more', () => {
  assert.equal(reloadSummaryText({ reloaded: [], unchanged: 3 }), '0 reloaded, 3 unchanged');
  assert.equal(
    reloadSummaryText({ reloaded: [org(1), org(2)], unchanged: 0 }),
    `2 reloaded (${org(1).organization_id} v2, ${org(2).organization_id} v2), 0 unchanged`,
  );
  const ten = Array.from({ length: 10 }, (_, i) => org(i));
  assert.equal(reloadSummaryText({ reloaded: ten, unchanged: 1 }).split(', ').length, 11); // 10 names + unchanged
  const many = Array.from({ length: 300 }, (_, i) => org(i));
  const line = reloadSummaryText({ reloaded: many, unchanged: 0 });
  assert.match(line, /^300 reloaded \(00000000-.* v2, .*, 290 more: --json lists them\), 0 unchanged$/);
  assert.equal(line.split(' v2').length - 1, 10);
});
