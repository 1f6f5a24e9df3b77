/**
 * The one home of the UUID check. Organization ids arrive as a UUID of any version in either case
 * (spec: query parameter, import lines, CLI flags, reload requests) and travel lower case from then
 * on, so they compare and key the stores as plain strings.
 */

/** 8-4-4-4-12 hexadecimal digits, either case. */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** The canonical (lower-case) organization id, or null when `text` is not a UUID. */
export function parseOrganizationId(text: string): string | null {
  return UUID.test(text) ? text.toLowerCase() : null;
}

/** True when `text` is already canonical: a lower-case UUID, as the stores require. */
export function isCanonicalOrganizationId(text: string): boolean {
  return parseOrganizationId(text) === text;
}
