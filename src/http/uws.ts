import { createRequire } from 'node:module';
import path from 'node:path';
import type * as UWS from 'uWebSockets.js';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
export type UwsModule = typeof UWS;

/**
 * uWS reads its header-size limit once, when the binary loads. A 1000-character accented
 * `keywords` is up to ~12 KB percent-encoded, so the default 4096 bytes would answer 400 itself.
 */
const MAX_HEADERS_SIZE = '65536';

let loaded: UwsModule | null = null;

/**
 * Loads the native uWebSockets.js binary directly, never the package's pure-JS fallback (`dist/`),
 * which `src/uws.js` would pick silently. Throws an Error starting with "uws:" when impossible.
 */
export function loadUws(): UwsModule {
  if (loaded) return loaded;
  if (process.env.UWS_HTTP_MAX_HEADERS_SIZE === undefined) process.env.UWS_HTTP_MAX_HEADERS_SIZE = MAX_HEADERS_SIZE;
  const require = createRequire(import.meta.url);
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  let mod: Partial<UwsModule>;
  try {
    const root = path.dirname(require.resolve('uWebSockets.js/package.json'));
    mod = require(path.join(root, 'binaries', binary)) as Partial<UwsModule>;
  } catch (err) {
    throw new Error(
      `uws: cannot load the native uWebSockets.js binary ${binary} (Node ${process.version}, ` +
        `needs glibc Linux, macOS or Windows on a supported ABI); refusing the pure-JS fallback: ` +
        `${(err as Error).message.split('\n')[0]}`,
    );
  }
  if (typeof mod.App !== 'function' || typeof mod.us_listen_socket_close !== 'function') {
    throw new Error(`uws: ${binary} loaded but has no App(); refusing to start`);
  }
  loaded = mod as UwsModule;
  return loaded;
}
