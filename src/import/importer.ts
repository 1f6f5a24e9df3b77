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
import { ImportError, lineErrorOf, show } from './import-error.js';
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
  try {
    for await (const batch of readLines(file, (n) => {
      bytes += n;
    })) {
      lines += batch.length;
      progress.update(bytes, lines);
      yield batch;
    }
  } catch (err) {
    throw lineErrorOf(err, path.basename(file));
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
 * Stages in flight at once: an organization's build (CPU, this thread) overlaps the writes and
 * fsyncs (or Redis round trips) of the ones before it. One at a time, an import of 1,000 small
 * organizations spent 28% of its time waiting on them.
 */
const STAGE_WINDOW = 8;
/** ... unless their organizations hold more messages than this together: each holds its prepared snapshot in memory until written. */
const STAGE_WINDOW_MESSAGES = 500_000;

/**
 * Publishes one snapshot per organization, all or nothing as far as the store allows: every
 * organization is built and written (staged) first, a few at a time (STAGE_WINDOW; each
 * builder's data is dropped once written, so memory falls as it goes), and only then are the
 * pointers moved, one small write each, a few at a time. A failure while staging (a full or
 * unreachable store: nearly all of an import's store time) starts no further stage, waits for
 * those in flight, publishes nothing and removes what was written. A failure among the pointer
 * moves cannot take back the ones made: no further one starts, and the error names those made.
 * `signal` aborts the staging (the stages in flight finish, then everything staged is removed,
 * its reason thrown); the pointer moves, once begun (`onPublishing`), all run.
 */
export async function publishImport(
  store: SnapshotStore,
  data: ImportData,
  signal?: AbortSignal,
  onPublishing?: () => void,
): Promise<PublishedOrg[]> {
  const orgIds = [...data.organizations.keys()];
  const staged: ({ snapshot: StagedSnapshot; org: PublishedOrg } | undefined)[] = new Array(orgIds.length);
  const inFlight = new Set<Promise<void>>();
  let inFlightMessages = 0;
  let failed: { err: unknown } | null = null;
  try {
    for (const [i, orgId] of orgIds.entries()) {
      // an interrupt (the CLI's SIGINT/SIGTERM) is seen between organizations: a build is one
      // synchronous step, and a stage is written whole or not at all
      signal?.throwIfAborted();
      const messages = data.organizations.get(orgId)!.messageCount;
      while (
        inFlight.size > 0 &&
        (inFlight.size >= STAGE_WINDOW || inFlightMessages + messages > STAGE_WINDOW_MESSAGES)
      )
        await Promise.race(inFlight);
      if (failed !== null) break;
      signal?.throwIfAborted();
      // no reference to the builder outlives this line: its growable columns (the prepared text's
      // are ~140 MB at 1M messages) can go while the index is built and written
      const org = data.organizations.get(orgId)!.build();
      data.organizations.delete(orgId);
      const counts = { organization_id: orgId, contacts: org.contacts.length, messages: org.messages.count };
      inFlightMessages += messages;
      // the build runs now, in this call; the writes go on while the next organization is built
      const stage: Promise<void> = store
        .stageSnapshot(org, { consumeText: true })
        .then(
          (snapshot) => {
            staged[i] = { snapshot, org: { ...counts, version: snapshot.ref.version } };
          },
          (err: unknown) => {
            // a limit of the index (more than 2^32 - 1 bytes of ids and text): which organization
            failed ??= {
              err:
                err instanceof Error && err.message.startsWith('index: ')
                  ? new Error(`import: organization ${orgId}: ${err.message.slice(7)}; nothing was published`)
                  : err,
            };
          },
        )
        .finally(() => {
          inFlight.delete(stage);
          inFlightMessages -= messages;
        });
      inFlight.add(stage);
    }
    await Promise.all(inFlight);
    if (failed !== null) throw (failed as { err: unknown }).err;
    signal?.throwIfAborted();
  } catch (err) {
    // every stage settled before any is removed (one still writing would leave its file)
    await Promise.all(inFlight);
    await Promise.all(staged.map((s) => s?.snapshot.discard()));
    throw nothingPublished(err);
  }
  onPublishing?.();
  // the pointer moves, STAGE_WINDOW at a time (each is a small durable write: one at a time, 1,000
  // organizations waited ~1.2 s on their fsyncs); after a failure none is started, those in
  // flight finish, and the error names what was published
  const all = staged as { snapshot: StagedSnapshot; org: PublishedOrg }[];
  const published = new Array<boolean>(all.length).fill(false);
  const commits = new Set<Promise<void>>();
  let commitFailed: { err: unknown } | null = null;
  let started = 0;
  for (; started < all.length && commitFailed === null; started++) {
    const i = started;
    const commit: Promise<void> = all[i].snapshot
      .commit()
      .then(
        () => {
          published[i] = true;
        },
        (err: unknown) => {
          commitFailed ??= { err };
        },
      )
      .finally(() => commits.delete(commit));
    commits.add(commit);
    while (commits.size >= STAGE_WINDOW) await Promise.race(commits);
  }
  await Promise.all(commits);
  if (commitFailed !== null) {
    const { err } = commitFailed as { err: unknown };
    await Promise.all(all.slice(started).map((x) => x.snapshot.discard()));
    const done = all
      .filter((_, i) => published[i])
      .map((x) => `organization ${x.org.organization_id} version ${x.org.version}`);
    if (done.length === 0) throw nothingPublished(err);
    throw new Error(`${(err as Error).message}; published all the same: ${done.join(', ')}`);
  }
  const out = all.map((x) => x.org);
  return out;
}

/**
 * A store's failure before any pointer moved, saying so: 'store: redis publishing organization X:
 * OOM ...' alone left an operator to guess whether some organizations were published (a review).
 * Other errors (an interrupt, an import error) say it their own way.
 */
function nothingPublished(err: unknown): unknown {
  if (!(err instanceof Error) || err.constructor !== Error || err.message.includes('nothing was published')) return err;
  const out = new Error(`${err.message}; nothing was published, and what was staged was removed`);
  // (a file error's code marks it expected to the CLI: no stack trace)
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined) (out as NodeJS.ErrnoException).code = code;
  return out;
}
