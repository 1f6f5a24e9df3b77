/**
 * The slow readers' budget (SLOW_CLIENT_BUFFER_MB) refuses a large answer on the public listener
 * while other bodies are held, and never on the operator listener: a review found /metrics of
 * ~150 organizations or more (over 64 KiB) answered 503 exactly when public clients read slowly.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { answerOf } from '../../../src/http/answer.js';
import { commonHeaders, inFlight } from '../../../src/http/respond.js';
import { serveWith } from '../../../src/http/uws-adapter.js';
import { loadUws } from '../../../src/http/uws.js';
import { RawConnection, rawGet, type RawResponse } from '../../helpers/raw-http.js';

const uws = loadUws();
const BODY = 'x'.repeat(100_000);

async function listen(budgeted: boolean): Promise<{ conn: RawConnection; close(): void }> {
  const common = commonHeaders(null);
  const app = serveWith(uws.App(), {
    common,
    logger: pino({ level: 'silent' }),
    budgeted,
    answer: () => answerOf('r1', false, common, 200, BODY, 'text/plain'),
    done() {},
  });
  const { port, socket } = await new Promise<{ port: number; socket: unknown }>((resolve) =>
    app.listen('127.0.0.1', 0, (s) => resolve({ port: uws.us_socket_local_port(s as never), socket: s })),
  );
  const conn = new RawConnection(port);
  return {
    conn,
    close() {
      conn.destroy();
      uws.us_listen_socket_close(socket as never);
    },
  };
}

describe('the slow readers budget and the two listeners', () => {
  const maxBefore = inFlight.heldMax;
  before(() => {
    // as if a slow reader held a 2 MB body past a 1 MB budget
    inFlight.heldMax = 1 << 20;
    inFlight.hold(2_000_000, 1);
  });
  after(() => {
    inFlight.hold(2_000_000, -1);
    inFlight.heldMax = maxBefore;
  });

  it('the public listener refuses a 100 KB answer with 503', async () => {
    const l = await listen(true);
    try {
      const r = (await l.conn.request(rawGet('/metrics'))) as RawResponse;
      assert.equal(r.status, 503);
    } finally {
      l.close();
    }
  });

  it('the operator listener sends it whole', async () => {
    const l = await listen(false);
    try {
      const r = (await l.conn.request(rawGet('/metrics'))) as RawResponse;
      assert.equal(r.status, 200);
      assert.equal(r.body.toString('utf8'), BODY);
    } finally {
      l.close();
    }
  });
});
