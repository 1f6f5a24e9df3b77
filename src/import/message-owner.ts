/**
 * Which organization and contact a message line belongs to, checked against the contacts file:
 * the same check, and the same errors, on the main thread and on a reader thread.
 */
import type { MessageLine } from '../model/records.js';
import { ImportError, show } from './import-error.js';

/** The contacts file as a message line is checked against it (structured-cloneable). */
export interface ContactDirectory {
  /** organization ids, in the order the contacts file first named them */
  orgIds: string[];
  /** per organization, in that order: contact id -> ordinal */
  contacts: ReadonlyMap<string, number>[];
  /** the first organization of each contact id: tells "unknown contact" from "wrong organization" */
  contactOrg: ReadonlyMap<string, string>;
}

/** Resolves message lines to (organization index, contact ordinal), or throws the line's ImportError. */
export class OwnerResolver {
  private readonly orgIndex: Map<string, number>;
  /** the last line's organization index and contact ordinal (no object a line) */
  org = 0;
  contact = 0;

  constructor(
    private readonly dir: ContactDirectory,
    private readonly messagesFile: string,
    private readonly contactsFile: string,
  ) {
    this.orgIndex = new Map(dir.orgIds.map((id, i) => [id, i]));
  }

  /** Sets `org` and `contact` for message `m` of line `line`, or throws its ImportError. */
  resolve(m: MessageLine, line: number): void {
    const org = this.orgIndex.get(m.organization_id);
    const contact = org === undefined ? undefined : this.dir.contacts[org].get(m.contact_id);
    if (org !== undefined && contact !== undefined) {
      this.org = org;
      this.contact = contact;
      return;
    }
    const owner = this.dir.contactOrg.get(m.contact_id);
    if (owner !== undefined) {
      throw new ImportError(
        this.messagesFile,
        line,
        'organization_id',
        `${show(m.organization_id)} differs from the organization ${owner} of contact ${m.contact_id}`,
      );
    }
    throw new ImportError(
      this.messagesFile,
      line,
      'contact_id',
      `no contact ${show(m.contact_id)} in ${this.contactsFile}`,
    );
  }
}
