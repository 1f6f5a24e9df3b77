import v8 from 'node:v8';

/**
 * Young-generation collections (scavenges) run on the thread that allocated, without helpers.
 * V8 splits a scavenge among its platform's helper threads, and the pause lasts until the last
 * of them is done; when every core is busy (serving threads, a proxy, the clients on the same
 * host) a helper that starts late holds the pause for a scheduler tick. This service's young
 * generation holds little that survives (a request's garbage), so one thread copies it faster
 * than several can be gathered. The flag is process-wide: every serving thread's heap has it.
 * Measured (bench/RESULTS.md, session 29; http bench, 30 s at full load, one serving thread):
 * scavenge time 509-528 -> 275 ms, p99 2.4-2.7 -> 0.5 ms, longest 7.6-8.2 -> 2.7 ms.
 */
export function scavengeOnOneThread(): void {
  v8.setFlagsFromString('--no-parallel-scavenge');
}
