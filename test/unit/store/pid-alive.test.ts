/**
 * pidAlive decides whether a registry entry's or a lock's process still runs on this host: a
 * zombie (killed, not reaped yet by its parent) must read as gone, or `npm run reload` waits for
 * it and fails with a refused connection until its entry expires.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { pidAlive } from '../../../src/store/file-utils.js';

test('this process is alive, a pid nobody has is not', () => {
  assert.equal(pidAlive(process.pid), true);
  const max = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  assert.equal(pidAlive(max + 1), false);
});

test('a zombie is not alive, its parent is', async () => {
  // sh starts `sleep 0`, then becomes `sleep 5`, which never reaps it: a zombie until sleep 5 exits
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const zombie = Number(
      await new Promise<string>((resolve) => parent.stdout.once('data', (d) => resolve(String(d)))),
    );
    const deadline = Date.now() + 3000;
    while (!/\) [ZX] /.test(readFileSync(`/proc/${zombie}/stat`, 'latin1')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(pidAlive(zombie), false);
    assert.equal(pidAlive(parent.pid!), true);
  } finally {
    parent.kill('SIGKILL');
  }
});
