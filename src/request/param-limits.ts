/**
 * Limits and defaults of the integer parameters (spec 4.2 / 8): the one place they are written.
 * The parameter parser validates against them and builds its messages from them; the OpenAPI
 * document publishes them.
 */
export const PARAM_LIMITS = {
  limit: { minimum: 1, maximum: 100, default: 50 },
  offset: { minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 },
  messages_limit: { minimum: 0, maximum: 20, default: 3 },
} as const;
