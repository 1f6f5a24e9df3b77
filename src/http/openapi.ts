import { CHANNELS } from '../model/records.js';
import { MAX_KEYWORDS_CODE_POINTS, MAX_Q_CODE_POINTS, MAX_TERM_CODE_POINTS, MAX_TERMS } from '../request/terms.js';
import { PARAM_LIMITS } from '../request/param-limits.js';
import { API_VERSION } from './api-version.js';
import { ERROR_CODES } from './errors.js';

const ts = { type: 'string', format: 'date-time', description: 'toISOString(): UTC, 3 fraction digits, Z' };
const nullableString = { type: ['string', 'null'] };
const errorBody = {
  type: 'object',
  required: ['error', 'message', 'request_id'],
  properties: {
    error: { type: 'string', enum: Object.values(ERROR_CODES) },
    message: { type: 'string' },
    request_id: { type: 'string', description: 'equals the X-Request-Id response header' },
    details: {
      type: 'array',
      description: 'on 400 only: every problem of the request',
      items: {
        type: 'object',
        required: ['parameter', 'message'],
        properties: { parameter: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

function param(name: string, schema: object, description: string, required = false) {
  return { name, in: 'query', required, schema, description };
}

/** The OpenAPI 3.1 document of the public endpoint, built from the same constants the parser uses. */
export function openApiDocument(): object {
  const errorResponse = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });
  const get = {
    operationId: 'searchContactsByMessageTerms',
    summary: 'Contacts of one organization whose messages match the terms',
    security: [{ bearer: [] }],
    parameters: [
      param(
        'organization_id',
        { type: 'string', format: 'uuid' },
        'UUID of any version, either case; echoed lower case',
        true,
      ),
      param('q', { type: 'string', maxLength: MAX_Q_CODE_POINTS }, 'one word or phrase (length in code points)'),
      param(
        'keywords',
        { type: 'string', maxLength: MAX_KEYWORDS_CODE_POINTS },
        'terms separated by , ; or line breaks',
      ),
      {
        ...param('keyword', { type: 'array', items: { type: 'string' } }, 'one phrase per occurrence (repeatable)'),
        style: 'form',
        explode: true,
      },
      param(
        'match',
        { type: 'string', enum: ['any', 'all'], default: 'any' },
        'all: every term in some counting message of the contact',
      ),
      param(
        'direction',
        { type: 'string', enum: ['inbound', 'outbound', 'all'], default: 'inbound' },
        'message direction filter',
      ),
      param('channel', { type: 'string', enum: [...CHANNELS] }, 'channel filter; absent means all channels'),
      param('from', { type: 'string' }, 'YYYY-MM-DD (start of day UTC) or RFC 3339 date-time; inclusive'),
      param('to', { type: 'string' }, 'YYYY-MM-DD (end of day UTC) or RFC 3339 date-time; inclusive'),
      param('limit', { type: 'integer', ...PARAM_LIMITS.limit }, 'contacts per page'),
      param('offset', { type: 'integer', ...PARAM_LIMITS.offset }, 'contacts to skip'),
      param('messages_limit', { type: 'integer', ...PARAM_LIMITS.messages_limit }, 'sample messages per contact'),
    ],
    description:
      `Terms are normalized (NFKD, marks removed, lower case), terms shorter than 2 characters are discarded, ` +
      `longer than ${MAX_TERM_CODE_POINTS} cut, duplicates removed, at most ${MAX_TERMS} used.`,
    responses: {
      '200': {
        description: 'one page of matching contacts, newest match first',
        headers: { 'X-Request-Id': { schema: { type: 'string' } } },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/SearchResponse' } } },
      },
      '400': errorResponse('invalid parameters; details lists every problem'),
      '401': errorResponse('missing, invalid, revoked or expired key (WWW-Authenticate: Bearer)'),
      '403': errorResponse('key lacks a scope, or is not authorized for the organization'),
      '404': errorResponse('no such path'),
      '405': errorResponse('method other than GET or HEAD (Allow: GET, HEAD)'),
      '414': errorResponse('request target longer than 32768 characters'),
      '421': errorResponse(
        'a sharded replica (ORGANIZATIONS) that does not hold this organization: misdirected_request',
      ),
      '429': {
        ...errorResponse('per-key rate limit exceeded (only when the operator enables it)'),
        headers: {
          'Retry-After': {
            schema: { type: 'integer', minimum: 1 },
            description: 'seconds until a request may succeed',
          },
        },
      },
      '431': errorResponse('request headers larger than 32768 characters'),
      '500': errorResponse('internal error; retry with backoff'),
      '503': {
        ...errorResponse(
          "unavailable: still loading, the key store cannot be read, or this organization's snapshot failed to load and no older version is in memory",
        ),
        headers: {
          'Retry-After': {
            schema: { type: 'integer', minimum: 1 },
            description: 'seconds after which to retry',
          },
        },
      },
    },
  };
  // HEAD (CONTRACT 6): the same checks, status and headers as GET, no body
  const head = {
    ...get,
    operationId: 'searchContactsByMessageTermsHead',
    summary: 'The status and headers GET would answer, without the body',
    responses: Object.fromEntries(
      Object.entries(get.responses).map(([status, r]) => {
        const { content: _body, ...rest } = r as { content?: unknown };
        return [status, rest];
      }),
    ),
  };
  return {
    openapi: '3.1.0',
    info: { title: 'Contact Message Search API', version: API_VERSION },
    paths: { '/contacts/message-search': { get, head } },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'crm_live_<prefix>_<secret>; scopes contacts:read and messages:read',
        },
      },
      schemas: {
        Error: errorBody,
        SearchResponse: {
          type: 'object',
          additionalProperties: false,
          required: ['data', 'pagination', 'query'],
          properties: {
            data: { type: 'array', items: { $ref: '#/components/schemas/ResultItem' } },
            pagination: {
              type: 'object',
              additionalProperties: false,
              required: ['limit', 'offset', 'count', 'has_more', 'next_offset'],
              properties: {
                limit: { type: 'integer' },
                offset: { type: 'integer' },
                count: { type: 'integer' },
                has_more: { type: 'boolean' },
                next_offset: { type: ['integer', 'null'] },
              },
            },
            query: {
              type: 'object',
              additionalProperties: false,
              required: ['organization_id', 'terms', 'match', 'direction', 'channel', 'from', 'to'],
              properties: {
                organization_id: { type: 'string' },
                terms: { type: 'array', items: { type: 'string' } },
                match: { type: 'string', enum: ['any', 'all'] },
                direction: { type: 'string', enum: ['inbound', 'outbound', 'all'] },
                channel: { type: ['string', 'null'], enum: [...CHANNELS, null] },
                from: { type: ['string', 'null'] },
                to: { type: ['string', 'null'] },
              },
            },
          },
        },
        ResultItem: {
          type: 'object',
          additionalProperties: false,
          required: [
            'contact',
            'match_count',
            'conversations_count',
            'first_matched_at',
            'last_matched_at',
            'messages',
          ],
          properties: {
            contact: {
              type: 'object',
              additionalProperties: false,
              required: ['id', 'organization_id', 'name', 'phone', 'email', 'avatar_url', 'source'],
              properties: {
                id: { type: 'string', format: 'uuid' },
                organization_id: { type: 'string', format: 'uuid' },
                name: nullableString,
                phone: nullableString,
                email: nullableString,
                avatar_url: nullableString,
                source: nullableString,
              },
            },
            match_count: { type: 'integer' },
            conversations_count: { type: 'integer' },
            first_matched_at: ts,
            last_matched_at: ts,
            messages: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['id', 'conversation_id', 'channel', 'direction', 'content', 'sent_at'],
                properties: {
                  id: { type: 'string' },
                  conversation_id: { type: 'string' },
                  channel: { type: 'string', enum: [...CHANNELS] },
                  direction: { type: 'string', enum: ['inbound', 'outbound'] },
                  content: { type: 'string' },
                  sent_at: ts,
                },
              },
            },
          },
        },
      },
    },
  };
}
