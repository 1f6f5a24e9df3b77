import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { API_VERSION } from '../../../src/http/api-version.js';
import { openApiDocument } from '../../../src/http/openapi.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';

const ORG = '00000000-0000-0000-0000-000000000000';
type Param = {
  name: string;
  schema: { enum?: string[]; minimum?: number; maximum?: number; default?: unknown; maxLength?: number };
};
const doc = openApiDocument() as { paths: Record<string, { get: { parameters: Param[] } }> };
const params = doc.paths['/contacts/message-search'].get.parameters;

test('openapi.json in the repository is the generated document (npm run openapi)', () => {
  assert.deepEqual(JSON.parse(readFileSync('openapi.json', 'utf8')), JSON.parse(JSON.stringify(openApiDocument())));
});

test("the API version is package.json's version (one number for the contract and the package)", () => {
  assert.equal(JSON.parse(readFileSync('package.json', 'utf8')).version, API_VERSION);
});

test('every documented enum value, bound and default is what the parser applies', () => {
  for (const p of params) {
    const s = p.schema;
    for (const value of s.enum ?? []) {
      const r = parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${value}`);
      assert.ok(r.ok, `${p.name}=${value} documented but refused`);
    }
    if (s.enum) assert.ok(!parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=nope`).ok);
    if (s.minimum !== undefined) {
      assert.ok(parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${s.minimum}`).ok, `${p.name} minimum`);
      if (s.minimum > 0) assert.ok(!parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${s.minimum - 1}`).ok);
    }
    if (s.maximum !== undefined) {
      assert.ok(parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${s.maximum}`).ok, `${p.name} maximum`);
      assert.ok(!parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${BigInt(s.maximum) + 1n}`).ok);
    }
    if (s.maxLength !== undefined) {
      assert.ok(
        !parseSearchParams(`organization_id=${ORG}&q=ab&${p.name}=${'x'.repeat(s.maxLength + 1)}`).ok,
        `${p.name} maxLength`,
      );
    }
    if (s.default !== undefined) {
      const r = parseSearchParams(`organization_id=${ORG}&q=ab`);
      assert.ok(r.ok);
      const applied = {
        match: r.request.match,
        direction: r.request.direction,
        limit: r.request.limit,
        offset: r.request.offset,
        messages_limit: r.request.messagesLimit,
      }[p.name];
      assert.equal(applied, s.default, `${p.name} default`);
    }
  }
});
