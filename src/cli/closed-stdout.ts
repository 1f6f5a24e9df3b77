import { fstatSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * A reader that stops early (`npm run keys -- list | head -1`) closes the pipe: the next write
 * fails with EPIPE, which Node raises as an uncaught error, a stack trace on the terminal. A
 * command-line tool ends quietly then, as Unix tools do, with the exit code it has so far. Any
 * other failure to write (a full disk: ENOSPC) is one line on stderr and exit 1.
 */
export function endQuietlyOnClosedOutput(): void {
  const tool = path.basename(process.argv[1] ?? 'cli').replace(/\.[jt]s$/, '');
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      if (stream === process.stdout) {
        try {
          writeSync(2, `${tool}: cannot write to standard output: ${err.message}\n`);
        } catch {
          // stderr is gone too: the exit code says it
        }
      }
      process.exit(1);
    });
  }
}

/**
 * Whether standard output goes nowhere: /dev/null, or closed (Node opens /dev/null in place of a
 * closed descriptor 1 at start, so `>&-` reads the same).
 */
export function stdoutDiscarded(): boolean {
  try {
    const out = fstatSync(1);
    return out.isCharacterDevice() && out.rdev === statSync('/dev/null').rdev;
  } catch {
    return true;
  }
}

/**
 * Writes `text` whole to standard output, synchronously: throws when it cannot (EPIPE from a
 * closed pipe, ENOSPC), so that a caller that must know it was written (a new key, shown once)
 * can act on it. A pipe that is full for now (EAGAIN) is waited for.
 */
export function writeStdoutSync(text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  let waits = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(1, bytes, at, bytes.length - at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || ++waits > 5000) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    }
  }
}
