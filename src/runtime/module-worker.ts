/**
 * One way to start a worker thread on a module of ours, compiled or not: the build worker and
 * the serving threads both use it.
 *
 * Compiled (`dist/`, what `npm start` runs) the entry is the `.js` beside the caller, loaded by
 * plain Node. From source the entry is the `.ts`, and tsx's loader is registered inside the
 * worker before it is imported: `execArgv: ['--import', 'tsx']` does not apply to a worker's
 * entry point on Node 20.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Starts `<stem>.js` (compiled) or `<stem>.ts` (through tsx) resolved against `callerUrl`. */
export function startModuleWorker(callerUrl: string, stem: string, options: WorkerOptions): Worker {
  if (callerUrl.endsWith('.js')) return new Worker(new URL(`./${stem}.js`, callerUrl), options);
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const entry = new URL(`./${stem}.ts`, callerUrl).href;
  const boot = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
