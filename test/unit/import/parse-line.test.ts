/** parseLine's errors name the file, line and field, whatever the line holds. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ImportError } from '../../../src/import/import-error.js';
import { parseLine } from '../../../src/import/parse-line.js';
import { ContactLineSchema, MessageLineSchema } from '../../../src/import/schemas.js';

const ORG = 'a08ff49b-6f77-4632-b16c-43069c43a8c3';
const CONTACT = '020f5bd1-0000-4000-8000-000000000001';

test('a value nested deeper than JSON.stringify can print: file, line and field (it threw RangeError, a stack trace)', () => {
  const deepArray = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
  const deepObject = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
  const message = `{"id":${deepArray},"organization_id":"${ORG}","contact_id":"${CONTACT}","conversation_id":"cv","channel":"email","direction":"inbound","content":"x","sent_at":"2024-01-01T00:00:00Z"}`;
  const contact = `{"id":"${CONTACT}","organization_id":"${ORG}","name":${deepObject},"phone":null,"email":null,"avatar_url":null,"source":null}`;
  assert.throws(
    () => parseLine(MessageLineSchema, { text: message, number: 7 }, 'messages.ndjson', 7),
    (err: unknown) =>
      err instanceof ImportError &&
      err.detail === 'messages.ndjson line 7: field "id": expected a string, got a nested array',
  );
  assert.throws(
    () => parseLine(ContactLineSchema, { text: contact, number: 3 }, 'contacts.ndjson', 3),
    (err: unknown) =>
      err instanceof ImportError &&
      err.detail === 'contacts.ndjson line 3: field "name": expected a string or null, got a nested object',
  );
});
