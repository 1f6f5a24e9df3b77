/**
 * Preload for benchmarks (`node --import tsx --import ./bench/gc-observer.ts src/main.ts`): a
 * perf_hooks observer appends every garbage-collection pause of the process to GC_LOG_FILE, one
 * line each: epoch ms at its start, duration ms, kind (1 minor, 2 major, 4 incremental, 8 weak
 * callbacks). Written in batches twice a second, so the observed server does little I/O for it.
 */
import { appendFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const file = process.env.GC_LOG_FILE;
if (file) {
  let lines: string[] = [];
  const flush = (): void => {
    if (lines.length === 0) return;
    appendFileSync(file, lines.join(''));
    lines = [];
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind ?? 0;
      lines.push(`${(performance.timeOrigin + e.startTime).toFixed(3)} ${e.duration.toFixed(3)} ${kind}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(flush, 500).unref();
  process.on('exit', flush);
}
