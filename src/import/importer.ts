/**
 * The import pipeline: readContacts → readMessages → publishImport. Everything is validated
 * before anything is published, so one bad line leaves the store untouched (CONTRACT 9).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Contact } from '../model/records.js';
import { OrgDataBuilder } from '../model/org-data-builder.js';
import type { SnapshotStore, StagedSnapshot } from '../store/snapshot-store.js';
import { IdSet } from './id-set.js';
import { ImportError, show } from './import-error.js';
import { readLines, type Line } from './line-reader.js';
import { readMessages } from './messages-reader.js';
import { parseLine } from './parse-line.js';
import { silentProgress, type Progress } from './progress.js';
import { ContactLineSchema } from './schemas.js';

export interface ReadOptions {
  /** messages files from this size on are read on two threads (messages-reader.ts; tests lower it) */
  splitMinBytes?: number;
}

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
  options: ReadOptions = {},
): Promise<ImportData> {
  const orgs = new Map<string, OrgState>();
  // First organization of each contact id: tells "unknown contact" from "wrong organization".
  const contactOrg = new Map<string, string>();
  let contacts = 0;

  const cname = path.basename(contactsFile);
  for await (const batch of linesWithProgress(contactsFile, progress))
    for (const l of batch) {
      const number = l.number;
      const c: Contact = parseLine(ContactLineSchema, l, cname, number);
      let org = orgs.get(c.organization_id);
      if (org === undefined) {
        // the builder prepares each message's text as it is read (tokens, escaped content,
        // conversation: beside the parsing, on the thread that parses it), not afterwards in the build
        const builder = new OrgDataBuilder(c.organization_id, { prepareText: true });
        // the set keeps no id strings: it reads the builder's column of ids (id-set.ts)
        org = { builder, messageIds: new IdSet(builder.messageIds()) };
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

  const states = [...orgs.values()];
  const messages = await readMessages(
    {
      file: messagesFile,
      messagesName: path.basename(messagesFile),
      contactsName: cname,
      directory: {
        orgIds: states.map((o) => o.builder.organizationId),
        contacts: states.map((o) => o.builder.contactOrdinals()),
        contactOrg,
      },
      sinks: states,
    },
    progress,
    options.splitMinBytes,
  );

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
 * Publishes one snapshot per organization, all or nothing as far as the store allows: every
 * organization is built and written (staged) first, one at a time (each builder's data is
 * dropped once written, so memory falls as it goes), and only then are the pointers moved, one
 * small write each. A failure while staging (a full or unreachable store: nearly all of an
 * import's store time) publishes nothing and removes what was written. A failure among the
 * pointer moves cannot take back the ones made: the error names them. `signal` aborts the staging
 * (what was staged is removed, its reason thrown); the pointer moves, once begun (`onPublishing`),
 * all run.
 */
export async function publishImport(
  store: SnapshotStore,
  data: ImportData,
  signal?: AbortSignal,
  onPublishing?: () => void,
): Promise<PublishedOrg[]> {
  const staged: { snapshot: StagedSnapshot; org: PublishedOrg }[] = [];
  try {
    for (const orgId of [...data.organizations.keys()]) {
      // an interrupt (the CLI's SIGINT/SIGTERM) is seen between organizations: a build is one
      // synchronous step, and a stage is written whole or not at all
      signal?.throwIfAborted();
      // no reference to the builder outlives this line: its growable columns (the prepared text's
      // are ~140 MB at 1M messages) can go while the index is built and written
      const org = data.organizations.get(orgId)!.build();
      data.organizations.delete(orgId);
      const snapshot = await store.stageSnapshot(org, { consumeText: true });
      staged.push({
        snapshot,
        org: {
          organization_id: orgId,
          version: snapshot.ref.version,
          contacts: org.contacts.length,
          messages: org.messages.count,
        },
      });
    }
    signal?.throwIfAborted();
  } catch (err) {
    await Promise.all(staged.map((s) => s.snapshot.discard()));
    throw err;
  }
  onPublishing?.();
  const out: PublishedOrg[] = [];
  for (const [i, s] of staged.entries()) {
    try {
      await s.snapshot.commit();
    } catch (err) {
      await Promise.all(staged.slice(i + 1).map((x) => x.snapshot.discard()));
      if (out.length === 0) throw err;
      const done = out.map((o) => `organization ${o.organization_id} version ${o.version}`).join(', ');
      throw new Error(`${(err as Error).message}; already published before it: ${done}`);
    }
    out.push(s.org);
  }
  return out;
}
