import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, requestLogger } from '../../../src/log/logger.js';

/** A logger at info writing its lines into an array, parsed. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines };
}

test('the base logger redacts authorization at the top and one level down, and key', () => {
  const { logger, lines } = capture();
  logger.info(
    { authorization: 'Bearer a', key: 'b', headers: { authorization: 'c' }, req: { authorization: 'd' } },
    'x',
  );
  assert.deepEqual(
    { authorization: lines[0].authorization, key: lines[0].key, headers: lines[0].headers, req: lines[0].req },
    {
      authorization: '[redacted]',
      key: '[redacted]',
      headers: { authorization: '[redacted]' },
      req: { authorization: '[redacted]' },
    },
  );
});

test('the request logger keeps the line as the base logger writes it, top-level key names redacted', () => {
  const { logger, lines } = capture();
  const fields = {
    request_id: 'r-1',
    method: 'GET',
    path: '/contacts/message-search',
    status: 200,
    duration_ms: 0.5,
    organization_id: null,
    key_prefix: 'abcd1234',
  };
  logger.info(fields, 'request');
  requestLogger(logger).info(fields, 'request');
  requestLogger(logger).info({ ...fields, authorization: 'Bearer a', key: 'b' }, 'request');
  const { time: _t0, ...base } = lines[0];
  const { time: _t1, ...viaRequest } = lines[1];
  assert.deepEqual(viaRequest, base);
  assert.equal(lines[2].authorization, '[redacted]');
  assert.equal(lines[2].key, '[redacted]');
});
