import { createRequire } from 'node:module';
import path from 'node:path';
import type * as UWS from 'uWebSockets.js';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
export type UwsModule = typeof UWS;

/**
 * Newer uWS builds read UWS_HTTP_MAX_HEADERS_SIZE once, when the binary loads; set for them. This
 * build (20.30 unofficial) ignores it (the binary has no such string): what it does, measured with
 * raw sockets (test/e2e/limits.test.ts, test/helpers/fuzz.ts):
 * - a request head that arrives in one read is parsed whatever its size (tested to ~90 KB on
 *   loopback); our handler then answers 414 / 431 over MAX_TARGET_CHARS / MAX_HEADER_CHARS;
 * - a head split over several reads is buffered up to a compiled-in 4096 bytes, then the
 *   connection is closed without an answer (a 12 KB `keywords` over a real network may hit this);
 * - more than ~47 header lines, a header name with a character other than [A-Za-z0-9-], a version
 *   other than `HTTP/1.1`, control characters or bare LF: no answer, closed at the idle timeout
 *   (~10 s); an unknown method, a missing Host, bad Content-Length: closed at once.
 * None of these reach JavaScript, so none can get the contract's JSON body.
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
