/**
 * wrapIndex's index is a fast-properties object from the start, not only once requests reached
 * the organization: in dictionary mode it held ~3.2 KB of hash table (in every serving thread,
 * for every organization), and the query code's field reads were slower. Every organization's
 * index has the same hidden class, whether its per-key columns are 16-bit (a small organization
 * loaded) or 32, so the query code's property loads stay monomorphic over many
 * organizations. (A sections record is not held past a load: store/packed-flat.ts.) The packed
 * form the main thread holds, and the copy a serving thread adopts, share one hidden class too:
 * made by a spread, each had a map of its own (~0.4 KB an organization). V8 tells which mode an
 * object is in, and its map, only to `--allow-natives-syntax` code, so the check runs in a child process.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const url = (p: string) => pathToFileURL(path.join(ROOT, p)).href;

// plain JavaScript (the child parses `%` calls itself); modules loaded through tsx
const CHILD = `
const { buildIndex } = await import(${JSON.stringify(url('src/index/build.ts'))});
const { OrgDataBuilder } = await import(${JSON.stringify(url('src/model/org-data-builder.ts'))});
const { flattenIndex, shareFlat, deriveDictionaries, wrapIndex, lazyIndex } = await import(${JSON.stringify(url('src/store/flat-index.ts'))});
const { adoptPacked, packFlat } = await import(${JSON.stringify(url('src/store/packed-flat.ts'))});
function indexOf(org, contact, messages) {
  const b = new OrgDataBuilder(org);
  b.addContact({ id: contact, organization_id: org, name: 'Ana', phone: null, email: null, avatar_url: null, source: null });
  for (let i = 0; i < messages; i++) {
    const sentAt = '2025-01-02T03:04:' + String(10 + i) + 'Z';
    b.addMessage({ id: 'm' + i, organization_id: org, contact_id: contact, conversation_id: 'c' + (i % 3), channel: 'email',
      direction: i % 2 === 0 ? 'outbound' : 'inbound', content: 'pedido número ' + i, sent_at: sentAt }, Date.parse(sentAt));
  }
  const flat = shareFlat(flattenIndex(buildIndex(b.build())));
  deriveDictionaries(flat);
  return { flat, index: wrapIndex(flat) };
}
const one = indexOf('0d0d0d0d-0000-4000-8000-000000000001', '3c3c3c3c-0000-4000-8000-000000000001', 20);
const two = indexOf('0d0d0d0d-0000-4000-8000-000000000002', '3c3c3c3c-0000-4000-8000-000000000002', 37);
// the packed forms, as the main thread holds them and as a serving thread adopts a posted one
const packedOne = packFlat(one.flat), packedTwo = packFlat({ ...two.flat, digest: 'd' });
const postedOne = adoptPacked(structuredClone(packedOne)), postedTwo = adoptPacked(structuredClone(packedTwo));
// as a server loads a small organization: its per-key columns in 16 bits, not 32 (narrow-sections.ts)
const narrow = lazyIndex(indexOf('0d0d0d0d-0000-4000-8000-000000000003', '3c3c3c3c-0000-4000-8000-000000000003', 11).flat).index;
if (!(narrow.entryStart instanceof Uint16Array)) throw new Error('expected 16-bit entry starts');
console.log(JSON.stringify({
  index: %HasFastProperties(one.index),
  oneShape: %HaveSameMap(one.index, two.index) && %HaveSameMap(one.index, narrow) && %HasFastProperties(narrow),
  packed: %HasFastProperties(packedOne) && %HaveSameMap(packedOne, packedTwo),
  posted: %HaveSameMap(postedOne, postedTwo) && %HaveSameMap(postedOne, packedOne),
}));
`;

test("the index has fast properties once wrapped, and every organization's index one shape; so has every packed flat", () => {
  const r = spawnSync(
    process.execPath,
    ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', CHILD],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout.trim().split('\n').at(-1)!), {
    index: true,
    oneShape: true,
    packed: true,
    posted: true,
  });
});
