/**
 * A reader that stops early (`npm run keys -- list | head -1`) closes the pipe: the next write
 * fails with EPIPE, which Node raises as an uncaught error, a stack trace on the terminal. A
 * command-line tool ends quietly then, as Unix tools do, with the exit code it has so far.
 */
export function endQuietlyOnClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      throw err;
    });
  }
}
