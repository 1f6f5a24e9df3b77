/** Import progress: a bar on a terminal, plain periodic lines otherwise (logs, CI), nothing when quiet. */
import cliProgress from 'cli-progress';

export interface Progress {
  /** A new file begins; `totalBytes` is its size. */
  start(file: string, totalBytes: number): void;
  /** Cumulative counts for the current file. */
  update(bytes: number, lines: number): void;
  stop(): void;
}

const LOG_EVERY_MS = 5_000;

function mib(n: number): string {
  return (n / 1048576).toFixed(1);
}

/** The reporter for `stream`: a cli-progress bar when it is a TTY, else a line every 5 s. */
export function createProgress(stream: NodeJS.WriteStream = process.stderr): Progress {
  return stream.isTTY ? barProgress(stream) : lineProgress(stream);
}

function barProgress(stream: NodeJS.WriteStream): Progress {
  let bar: cliProgress.SingleBar | null = null;
  let t0 = 0;
  return {
    start(file, totalBytes) {
      bar?.stop();
      t0 = Date.now();
      bar = new cliProgress.SingleBar(
        {
          stream,
          format:
            '{file} {bar} {percentage}% | {mib}/{totalMib} MiB | {lines} lines | {rate} lines/s | eta {eta_formatted}',
          hideCursor: true,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(Math.max(totalBytes, 1), 0, { file, lines: 0, rate: 0, mib: '0.0', totalMib: mib(totalBytes) });
    },
    update(bytes, lines) {
      const s = (Date.now() - t0) / 1000;
      bar?.update(bytes, { lines, rate: s > 0 ? Math.round(lines / s) : 0, mib: mib(bytes) });
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}

function lineProgress(stream: NodeJS.WriteStream): Progress {
  let file = '',
    total = 0,
    t0 = 0,
    last = 0;
  return {
    start(f, totalBytes) {
      file = f;
      total = totalBytes;
      t0 = last = Date.now();
      // One line as each file begins, so a log shows the import started before the first 5 s tick.
      stream.write(`snapshot: reading ${file}, ${mib(total)} MiB\n`);
    },
    update(bytes, lines) {
      const now = Date.now();
      if (now - last < LOG_EVERY_MS) return;
      last = now;
      const rate = Math.round(lines / ((now - t0) / 1000));
      stream.write(`snapshot: ${file}: ${lines} lines, ${mib(bytes)} of ${mib(total)} MiB, ${rate} lines/s\n`);
    },
    stop() {},
  };
}

/** A reporter that reports nothing (tests, library use). */
export const silentProgress: Progress = { start() {}, update() {}, stop() {} };
