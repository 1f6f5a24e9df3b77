/**
 * The import pipeline: readContacts → readMessages → publishImport. Everything is validated
 * before anything is published, so one bad line leaves the store untouched (CONTRACT 9).
 */
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import * as v from 'valibot';
import type { Contact, MessageLine } from '../model/records.js';
import { OrgDataBuilder } from '../model/org-data-builder.js';
import type { SnapshotRef, SnapshotStore } from '../store/snapshot-store.js';
import { parseRfc3339 } from '../time/rfc3339.js';
import { IdSet } from './id-set.js';
import { ImportError, show } from './import-error.js';
import { firstInvalidUtf8, readLines, type Line } from './line-reader.js';
import { silentProgress, type Progress } from './progress.js';
import { ContactLineSchema, MessageLineSchema } from './schemas.js';

/** What the files held, per organization, ready to publish. */
export interface ImportData {
  organizations: Map<string, OrgDataBuilder>;
  contacts: number;
  messages: number;
}

interface OrgState {
  builder: OrgDataBuilder;
  messageIds: IdSet;
}

/**
 * The error for a line that is not valid UTF-8, naming the field whose value holds the first bad
 * sequence when the line is otherwise a JSON object: the bad bytes are replaced by a random marker
 * that is valid inside a JSON string, and the field holding the marker is the culprit.
 */
function utf8Error(bytes: Buffer, file: string, line: number): ImportError {
  const bad = firstInvalidUtf8(bytes) ?? { at: 0, length: 0 };
  const hex = [...bytes.subarray(bad.at, bad.at + bad.length)]
    .map((b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`)
    .join(' ');
  const problem = `invalid UTF-8 (${hex} at byte ${bad.at + 1} of the line)`;
  // Plain ASCII: valid inside a JSON string, a syntax error anywhere else.
  const marker = `~${randomBytes(8).toString('hex')}~`;
  let field: string | null = null;
  try {
    const text = Buffer.concat([
      bytes.subarray(0, bad.at),
      Buffer.from(marker),
      bytes.subarray(bad.at + bad.length),
    ]).toString('utf8');
    const json = JSON.parse(text) as unknown;
    if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
      for (const [k, val] of Object.entries(json)) {
        if (JSON.stringify(val)?.includes(marker)) {
          field = k;
          break;
        }
      }
    }
  } catch {
    /* not JSON apart from the bad bytes: the line only */
  }
  return new ImportError(file, line, field, problem);
}

/** Parses one line; throws ImportError naming the first problem. */
function parseLine<S extends v.GenericSchema>(
  schema: S,
  { text, invalidUtf8 }: Line,
  file: string,
  line: number,
): v.InferOutput<S> {
  if (invalidUtf8 !== undefined) throw utf8Error(invalidUtf8, file, line);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ImportError(file, line, null, `invalid JSON: ${(err as Error).message}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ImportError(file, line, null, `expected a JSON object, got ${show(json)}`);
  }
  const r = v.safeParse(schema, json, { abortEarly: true });
  if (r.success) return r.output;
  const issue = r.issues[0];
  const field = issue.path?.map((p) => String(p.key)).join('.') ?? null;
  const missing = issue.kind === 'schema' && issue.type === 'object' && issue.input === undefined;
  throw new ImportError(file, line, field, missing ? 'missing' : `${issue.message}, got ${show(issue.input)}`);
}

/** The file's lines in batches (line-reader.ts), the progress updated once a batch. */
async function* linesWithProgress(file: string, progress: Progress): AsyncGenerator<Line[]> {
  const size = (await stat(file)).size;
  progress.start(path.basename(file), size);
  let bytes = 0,
    lines = 0;
  for await (const batch of readLines(file, (n) => {
    bytes += n;
  })) {
    lines += batch.length;
    progress.update(bytes, lines);
    yield batch;
  }
  progress.update(bytes, lines);
  progress.stop();
}

/** Reads and validates both files; resolves to the per-organization data, or rejects with an ImportError. */
export async function readImport(
  contactsFile: string,
  messagesFile: string,
  progress: Progress = silentProgress,
): Promise<ImportData> {
  const orgs = new Map<string, OrgState>();
  // First organization of each contact id: tells "unknown contact" from "wrong organization".
  const contactOrg = new Map<string, string>();
  let contacts = 0,
    messages = 0;

  const cname = path.basename(contactsFile);
  for await (const batch of linesWithProgress(contactsFile, progress))
    for (const l of batch) {
      const number = l.number;
      const c: Contact = parseLine(ContactLineSchema, l, cname, number);
      let org = orgs.get(c.organization_id);
      if (org === undefined) {
        org = { builder: new OrgDataBuilder(c.organization_id), messageIds: new IdSet() };
        orgs.set(c.organization_id, org);
      }
      if (!org.builder.addContact(c)) {
        throw new ImportError(
          cname,
          number,
          'id',
          `duplicate contact id ${show(c.id)} in organization ${c.organization_id}`,
        );
      }
      if (!contactOrg.has(c.id)) contactOrg.set(c.id, c.organization_id);
      contacts++;
    }

  const mname = path.basename(messagesFile);
  for await (const batch of linesWithProgress(messagesFile, progress))
    for (const l of batch) {
      const number = l.number;
      const m: MessageLine = parseLine(MessageLineSchema, l, mname, number);
      const org = orgs.get(m.organization_id);
      if (org === undefined || !org.builder.hasContact(m.contact_id)) {
        const owner = contactOrg.get(m.contact_id);
        if (owner !== undefined) {
          throw new ImportError(
            mname,
            number,
            'organization_id',
            `${show(m.organization_id)} differs from the organization ${owner} of contact ${m.contact_id}`,
          );
        }
        throw new ImportError(mname, number, 'contact_id', `no contact ${show(m.contact_id)} in ${cname}`);
      }
      if (!org.messageIds.add(m.id)) {
        throw new ImportError(
          mname,
          number,
          'id',
          `duplicate message id ${show(m.id)} in organization ${m.organization_id}`,
        );
      }
      org.builder.addMessage(m, parseRfc3339(m.sent_at)!);
      messages++;
    }

  const organizations = new Map<string, OrgDataBuilder>();
  for (const [id, o] of orgs) organizations.set(id, o.builder);
  return { organizations, contacts, messages };
}

/** One organization's published snapshot, as the CLI reports it. */
export interface PublishedOrg {
  organization_id: string;
  version: number;
  contacts: number;
  messages: number;
}

/**
 * Publishes one snapshot per organization, one at a time (each builder's data is dropped once
 * published, so memory falls as it goes). A store failure midway leaves the earlier
 * organizations published and the rest untouched: each organization stays whole.
 */
export async function publishImport(store: SnapshotStore, data: ImportData): Promise<PublishedOrg[]> {
  const out: PublishedOrg[] = [];
  for (const [orgId, builder] of data.organizations) {
    const org = builder.build();
    data.organizations.delete(orgId);
    const ref: SnapshotRef = await store.publishSnapshot(org, { consumeText: true });
    out.push({
      organization_id: orgId,
      version: ref.version,
      contacts: org.contacts.length,
      messages: org.messages.count,
    });
  }
  return out;
}
