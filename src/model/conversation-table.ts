import { jsonEscaped, StringColumnBuilder } from '../index/string-column.js';
import { Growable } from './growable.js';

/**
 * Conversations numbered by first occurrence. A conversation is a (contact, conversation id)
 * pair: looked up by the id string alone (no key string built a message: 0.33 s of a 1M build),
 * and an id met again under another contact takes the pair's own key, in a second map. Each
 * conversation keeps its contact and its id, JSON-escaped and UTF-8, as the index stores it.
 */
export class ConversationTable {
  private readonly byId = new Map<string, number>();
  private readonly byPair = new Map<string, number>();
  /** per conversation: its contact's ordinal */
  readonly contact = new Growable(256);
  /** per conversation: its id, escaped (jsonEscaped) */
  readonly ids = new StringColumnBuilder();

  get size(): number {
    return this.contact.length;
  }

  /** The number of the conversation (contact, id), added when new. */
  idOf(contact: number, id: string): number {
    let conv = this.byId.get(id);
    if (conv === undefined) {
      conv = this.add(contact, id);
      this.byId.set(id, conv);
    } else if (this.contact.buf[conv] !== contact) {
      const pair = contact + ':' + id;
      conv = this.byPair.get(pair);
      if (conv === undefined) {
        conv = this.add(contact, id);
        this.byPair.set(pair, conv);
      }
    }
    return conv;
  }

  private add(contact: number, id: string): number {
    this.contact.push(contact);
    this.ids.push(jsonEscaped(id));
    return this.contact.length - 1;
  }
}
