import { type DestinationStream, pino, type Logger } from 'pino';
import type { LogLevel } from '../config/config.js';

export type { Logger } from 'pino';

/** The top-level names a key could be logged under. */
const KEY_FIELDS = ['authorization', 'key'];
const CENSOR = '[redacted]';

/**
 * pino's `isoTime` (`,"time":"<toISOString>"`) for the instant `now`, the text up to the second
 * made once a second: a line a request at the default level, 0.5 µs a line with a Date each time
 * against 0.06 µs. Instants whose ISO form is not 24 characters (years outside 0000-9999) take
 * toISOString whole.
 */
export function isoTimeField(now: number): string {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    const iso = new Date(now).toISOString();
    if (iso.length !== 24) return `,"time":"${iso}"`;
    cachedSecond = second;
    cachedPrefix = `,"time":"${iso.slice(0, 20)}`;
  }
  const ms = now - second * 1000;
  return cachedPrefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z"';
}
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * JSON lines on stdout (or `destination`, for tests). `authorization` is redacted wherever it
 * appears, as a second line of defence: no code path is supposed to log a key in the first place.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'message-search' },
    timestamp: () => isoTimeField(Date.now()),
    redact: { paths: [...KEY_FIELDS, 'headers.authorization', '*.authorization'], censor: CENSOR },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/**
 * The logger of the line each request writes (public-app.ts): its fields are fixed strings and
 * numbers, none nested, so it redacts the top-level key names only. The base logger's wildcard
 * path makes pino pass every field of a line through its redacting stringifier: 6.5 against
 * 4.1 µs a line (200k lines to a file), one line a request at the default level.
 */
export function requestLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: KEY_FIELDS, censor: CENSOR } });
}
