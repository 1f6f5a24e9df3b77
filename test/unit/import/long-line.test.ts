/**
 * A line longer than MAX_LINE_BYTES is refused with its file and line, before it is held whole,
 * read on one thread or two (the second thread's line numbers shifted by the first part's).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ImportError } from '../../../src/import/import-error.js';
import { readImport } from '../../../src/import/importer.js';
import { MAX_LINE_BYTES } from '../../../src/import/line-reader.js';

const ORG = 'a08ff49b-6f77-4632-b16c-43069c43a8c3';
const CONTACT = '020f5bd1-0000-4000-8000-000000000001';
const dir = mkdtempSync(path.join(tmpdir(), 'long-line-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const contactLine = JSON.stringify({
  id: CONTACT,
  organization_id: ORG,
  name: 'x',
  phone: null,
  email: null,
  avatar_url: null,
  source: null,
});
const message = (i: number, content: string) =>
  JSON.stringify({
    id: `m${i}`,
    organization_id: ORG,
    contact_id: CONTACT,
    conversation_id: 'cv',
    channel: 'email',
    direction: 'inbound',
    content,
    sent_at: '2024-01-01T00:00:00Z',
  });

const refused = (file: string, line: number) => (err: unknown) =>
  err instanceof ImportError &&
  err.detail === `${file} line ${line}: longer than 16 MiB (${MAX_LINE_BYTES} bytes): a line holds one record`;

test('a line over 16 MiB: file and line named, on one thread and on two', async () => {
  const contacts = path.join(dir, 'contacts.ndjson');
  const messages = path.join(dir, 'messages.ndjson');
  writeFileSync(contacts, `${contactLine}\n`);
  const lines = Array.from({ length: 2000 }, (_, i) => message(i, 'ok'));
  // line 1,501 (after a blank line 1,500), no newline after it: the tail of a file cut short
  lines.splice(1499, 0, '');
  lines.splice(1500, 0, message(9999, 'x'.repeat(MAX_LINE_BYTES)));
  writeFileSync(messages, lines.join('\n'));
  await assert.rejects(readImport(contacts, messages), refused('messages.ndjson', 1501));
  // the second thread reads from ~44% of the file on: the long line is in its part
  await assert.rejects(
    readImport(contacts, messages, undefined, { splitMinBytes: 1 }),
    refused('messages.ndjson', 1501),
  );
  // a contacts file's
  writeFileSync(contacts, `${contactLine}\n${'{'.repeat(MAX_LINE_BYTES + 1)}`);
  await assert.rejects(readImport(contacts, messages), refused('contacts.ndjson', 2));
});

test('a line of exactly 16 MiB is read', async () => {
  const contacts = path.join(dir, 'contacts2.ndjson');
  const messages = path.join(dir, 'messages2.ndjson');
  writeFileSync(contacts, `${contactLine}\n`);
  const shell = message(1, '').length;
  writeFileSync(messages, `${message(1, 'y'.repeat(MAX_LINE_BYTES - shell))}\n`);
  const data = await readImport(contacts, messages);
  assert.equal(data.messages, 1);
  // its CR and a BOM are not the record's: the same line ended CRLF, after a BOM, is read too
  // (it was refused as longer than 16 MiB), and one byte more is still refused
  writeFileSync(messages, `\uFEFF${message(1, 'y'.repeat(MAX_LINE_BYTES - shell))}\r\n`);
  assert.equal((await readImport(contacts, messages)).messages, 1);
  writeFileSync(messages, `\uFEFF${message(1, 'y'.repeat(MAX_LINE_BYTES - shell + 1))}\r\n`);
  await assert.rejects(readImport(contacts, messages), refused('messages2.ndjson', 1));
  // the same line as the last, without a newline after it
  writeFileSync(messages, `${message(0, 'ok')}\n${message(1, 'y'.repeat(MAX_LINE_BYTES - shell + 1))}`);
  await assert.rejects(readImport(contacts, messages), refused('messages2.ndjson', 2));
});
