/**
 * `npm run build`, second step: the server (`dist/main.js`) and the worker threads it starts
 * (`dist/build-worker.js`, `dist/serving-thread.js`) as bundles, after tsc has compiled every
 * module to dist/ (the CLIs run those).
 *
 * Why: a server that loads ~150 modules one by one keeps each one's source text and module
 * record in its heap and touches the module loader's code in the node binary. Bundled, minified
 * and tree-shaken (valibot alone was 0.4 MB of source), an empty server takes ~7 MiB less RSS and
 * a server with the 1M organization ~2 MiB less (bench/RESULTS.md, session 28).
 *
 * What stays outside: uWebSockets.js and msgpackr's optional native addon (native binaries, loaded
 * from node_modules). Code only Redis needs is split into chunks of its own, loaded by the dynamic
 * import in store/open-store.ts only when REDIS_URL is set. Entries and chunks sit side by side in
 * dist/, so a worker entry resolved beside its caller (runtime/module-worker.ts) is found from
 * any of them. Source maps map stack traces back to src/ (`npm start` runs with
 * --enable-source-maps, which parses every map at start and keeps it): without the sources' text
 * in them (2.5 MB of maps -> 0.7 MB), a server started so settles 1.5 MiB lower at 1M.
 *
 * Plain JavaScript, run by node itself: the Docker build runs it without tsx.
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');

// chunks of an earlier build (their names carry a hash of their content)
for (const f of readdirSync(dist)) if (/^chunk-.*\.js(\.map)?$/.test(f)) rmSync(path.join(dist, f));

await build({
  absWorkingDir: root,
  entryPoints: {
    main: 'src/main.ts',
    'build-worker': 'src/catalog/build-worker.ts',
    'serving-thread': 'src/server/serving-thread.ts',
  },
  outdir: 'dist',
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minify: true,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  legalComments: 'none',
  external: ['uWebSockets.js', 'msgpackr'],
  // the CommonJS packages bundled here (pino, prom-client, ioredis) require Node's own modules
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
