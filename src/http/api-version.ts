/**
 * The version of the public contract (spec 9): reported by /healthz and the OpenAPI document, and
 * equal to package.json's `version` (test/unit/http/openapi.test.ts checks it).
 */
export const API_VERSION = '0.1.0-beta';
