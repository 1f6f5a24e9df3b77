import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { createLogger, isoTimeField, requestLogger } from '../../../src/log/logger.js';

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

test('the time field is pino isoTime, for any instant, in any order', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: -62198755200000, max: 253402300799999 }), { minLength: 1, maxLength: 20 }),
      (instants) => {
        for (const now of instants) assert.equal(isoTimeField(now), `,"time":"${new Date(now).toISOString()}"`);
      },
    ),
    { numRuns: 2000 },
  );
  // the same second twice, then years with other ISO forms, then back
  for (const now of [1764135105129, 1764135105001, 1764135105999, -62198755200001, 253402300800000, 1764135105050])
    assert.equal(isoTimeField(now), `,"time":"${new Date(now).toISOString()}"`);
});
