import { type DestinationStream, pino, type Logger } from 'pino';
import type { LogLevel } from '../config/config.js';

export type { Logger } from 'pino';

/** The top-level names a key could be logged under. */
const KEY_FIELDS = ['authorization', 'key'];
const CENSOR = '[redacted]';

/**
 * JSON lines on stdout (or `destination`, for tests). `authorization` is redacted wherever it
 * appears, as a second line of defence: no code path is supposed to log a key in the first place.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'message-search' },
    timestamp: pino.stdTimeFunctions.isoTime,
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
