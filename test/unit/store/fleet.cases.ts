/** The fleet's shared cases: every Fleet backend runs them (test/unit/store/store.test.ts). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { pidNamespace } from '../../../src/store/file-utils.js';
import type { Fleet, ReloadRequest } from '../../../src/store/fleet.js';

/** Registers the cases; `fleet()` is read once the enclosing suite has opened it. */
export function fleetCases(fleet: () => Fleet): void {
  describe('fleet', () => {
    test('register, list, expire, unregister', async () => {
      const entry = {
        id: 'test-1',
        pid: process.pid,
        hostname: 'h',
        adminUrl: null,
        startedAt: 'now',
        heartbeatAt: Date.now(),
      };
      await fleet().registerServer(entry, 300);
      await fleet().registerServer({ ...entry, id: 'test-2' }, 10_000);
      assert.deepEqual((await fleet().listServers()).map((s) => s.id).sort(), ['test-1', 'test-2']);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        (await fleet().listServers()).map((s) => s.id),
        ['test-2'],
      );
      await fleet().unregisterServer('test-2');
      assert.deepEqual(await fleet().listServers(), []);
    });

    test('lapsed entries: this host and PID namespace, process still there; others dropped or ignored', async () => {
      // an expired entry stays listed as lapsed only when its pid can be checked from here: the
      // same hostname and PID namespace (a container with the host's hostname has pids of its own)
      const base = {
        pid: process.pid,
        hostname: hostname(),
        pidNamespace: pidNamespace(),
        adminUrl: null,
        startedAt: new Date().toISOString(),
        heartbeatAt: Date.now(),
      };
      await fleet().registerServer({ ...base, id: 'lapse-here' }, 100);
      await fleet().registerServer({ ...base, id: 'lapse-other-ns', pidNamespace: 'pid:[1]' }, 100);
      await fleet().registerServer({ ...base, id: 'lapse-no-ns', pidNamespace: undefined }, 100);
      await fleet().registerServer({ ...base, id: 'lapse-reused-pid', startedAt: '2000-01-01T00:00:00.000Z' }, 100);
      await new Promise((r) => setTimeout(r, 250));
      assert.deepEqual(await fleet().listServers(), []);
      assert.deepEqual(
        (await fleet().lapsedServers()).map((s) => s.id),
        ['lapse-here'],
      );
      await fleet().unregisterServer('lapse-here');
      assert.deepEqual(await fleet().lapsedServers(), []);
    });

    test('reload signals, when the fleet has them: a request reaches a subscriber, acks are read back', async (t) => {
      const signals = fleet().signals;
      if (signals === null) {
        t.skip("no broadcast here: the reload CLI calls each server's admin URL");
        return;
      }
      const got: ReloadRequest[] = [];
      const unsubscribe = await signals.subscribe(
        (req) => got.push(req),
        () => {},
      );
      try {
        const req = { requestId: `test-${process.pid}`, organizationId: null };
        await signals.publish(req);
        for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        assert.deepEqual(got, [req]);
        await signals.putAck(req.requestId, 'server-a', { ok: true, summary: { reloaded: [] } });
        await signals.putAck(req.requestId, 'server-b', { ok: false, error: 'boom' });
        assert.deepEqual(
          await signals.acks(req.requestId),
          new Map([
            ['server-a', { ok: true, summary: { reloaded: [] } }],
            ['server-b', { ok: false, error: 'boom' }],
          ]),
        );
        assert.deepEqual(await signals.acks('no-such-request'), new Map());
      } finally {
        await unsubscribe();
      }
    });
  });
}
