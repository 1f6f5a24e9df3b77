import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config/config.js';

export type { Logger } from 'pino';

/**
 * JSON lines on stdout. `authorization` is redacted wherever it appears, as a second line of
 * defence: no code path is supposed to log a key in the first place.
 */
export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'message-search' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['authorization', 'headers.authorization', '*.authorization', 'key'], censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  });
}
