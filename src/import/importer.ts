/**
 * The import pipeline: readContacts → readMessages → publishImport. Everything is validated
 * before anything is published, so one bad line leaves the store untouched (CONTRACT 9).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import * as v from 'valibot';
import type { Contact, MessageLine } from '../model/records.js';
import { OrgDataBuilder } from '../model/org-data-builder.js';
import type { SnapshotRef, Store } from '../store/store.js';
import { parseRfc3339 } from '../time/rfc3339.js';
import { IdSet } from './id-set.js';
import { ImportError, show } from './import-error.js';
import { readLines } from './line-reader.js';
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

/** Parses one line; throws ImportError naming the first problem. */
function parseLine<S extends v.GenericSchema>(schema: S, text: string, file: string, line: number): v.InferOutput<S> {
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

async function* linesWithProgress(file: string, progress: Progress): AsyncGenerator<{ number: number; text: string }> {
  const size = (await stat(file)).size;
  progress.start(path.basename(file), size);
  let bytes = 0, lines = 0;
  for await (const line of readLines(file, (n) => { bytes += n; })) {
    if ((++lines & 1023) === 0) progress.update(bytes, lines);
    yield line;
  }
  progress.update(bytes, lines);
  progress.stop();
}

/** Reads and validates both files; resolves to the per-organization data, or rejects with an ImportError. */
export async function readImport(contactsFile: string, messagesFile: string, progress: Progress = silentProgress): Promise<ImportData> {
  const orgs = new Map<string, OrgState>();
  // First organization of each contact id: tells "unknown contact" from "wrong organization".
  const contactOrg = new Map<string, string>();
  let contacts = 0, messages = 0;

  const cname = path.basename(contactsFile);
  for await (const { number, text } of linesWithProgress(contactsFile, progress)) {
    const c: Contact = parseLine(ContactLineSchema, text, cname, number);
    let org = orgs.get(c.organization_id);
    if (org === undefined) {
      org = { builder: new OrgDataBuilder(c.organization_id), messageIds: new IdSet() };
      orgs.set(c.organization_id, org);
    }
    if (!org.builder.addContact(c)) {
      throw new ImportError(cname, number, 'id', `duplicate contact id ${show(c.id)} in organization ${c.organization_id}`);
    }
    if (!contactOrg.has(c.id)) contactOrg.set(c.id, c.organization_id);
    contacts++;
  }

  const mname = path.basename(messagesFile);
  for await (const { number, text } of linesWithProgress(messagesFile, progress)) {
    const m: MessageLine = parseLine(MessageLineSchema, text, mname, number);
    const org = orgs.get(m.organization_id);
    if (org === undefined || !org.builder.hasContact(m.contact_id)) {
      const owner = contactOrg.get(m.contact_id);
      if (owner !== undefined) {
        throw new ImportError(mname, number, 'organization_id', `${show(m.organization_id)} differs from the organization ${owner} of contact ${m.contact_id}`);
      }
      throw new ImportError(mname, number, 'contact_id', `no contact ${show(m.contact_id)} in ${cname}`);
    }
    if (!org.messageIds.add(m.id)) {
      throw new ImportError(mname, number, 'id', `duplicate message id ${show(m.id)} in organization ${m.organization_id}`);
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
export async function publishImport(store: Store, data: ImportData): Promise<PublishedOrg[]> {
  const out: PublishedOrg[] = [];
  for (const [orgId, builder] of data.organizations) {
    const org = builder.build();
    data.organizations.delete(orgId);
    const ref: SnapshotRef = await store.publishSnapshot(org);
    out.push({ organization_id: orgId, version: ref.version, contacts: org.contacts.length, messages: org.messages.count });
  }
  return out;
}
