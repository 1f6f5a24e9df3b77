import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearerToken, singleAuthorization } from '../../../src/auth/api-key.js';

const KEY = `crm_live_abcdefgh_${'S'.repeat(32)}`;

test('bearerToken: the scheme in any case, one token, spaces around it', () => {
  assert.equal(bearerToken(`Bearer ${KEY}`), KEY);
  assert.equal(bearerToken(`bEaReR   ${KEY}  `), KEY);
  for (const bad of ['', 'Bearer', `Basic ${KEY}`, `Bearer ${KEY} x`, `Bearer${KEY}`])
    assert.equal(bearerToken(bad), null, bad);
});

test('singleAuthorization: several lines count only when they carry one key', () => {
  assert.equal(singleAuthorization(`Bearer ${KEY}`), `Bearer ${KEY}`);
  assert.equal(singleAuthorization('whatever'), 'whatever'); // one line: judged by authenticate
  assert.equal(singleAuthorization(`Bearer ${KEY}\nbearer  ${KEY}`), `Bearer ${KEY}`);
  assert.equal(singleAuthorization(`Bearer ${KEY}\nBearer nope`), '');
  assert.equal(singleAuthorization(`Bearer nope\nBearer ${KEY}`), '');
  assert.equal(singleAuthorization(`Bearer ${KEY}\n`), '');
  assert.equal(singleAuthorization(`Basic x\nBasic x`), '');
});
