/** valibot schemas of the import lines (CONTRACT 9). Messages say what was expected; the caller adds what it got. */
import * as v from 'valibot';
import { CHANNELS, DIRECTIONS } from '../model/records.js';
import { parseRfc3339 } from '../time/rfc3339.js';
import { UUID } from '../model/organization-id.js';

// Any version, either case; stored lower case so ids compare as plain strings.
const uuid = v.pipe(v.string('expected a UUID'), v.regex(UUID, 'expected a UUID'), v.toLowerCase());
const str = v.string('expected a string');
const nullableStr = v.nullable(v.string('expected a string or null'), null);

export const ContactLineSchema = v.object({
  id: uuid,
  organization_id: uuid,
  name: nullableStr,
  phone: nullableStr,
  email: nullableStr,
  avatar_url: nullableStr,
  source: nullableStr,
});

export const MessageLineSchema = v.object({
  id: str,
  organization_id: uuid,
  contact_id: uuid,
  conversation_id: str,
  channel: v.picklist(CHANNELS, `expected one of ${CHANNELS.join(', ')}`),
  direction: v.picklist(DIRECTIONS, `expected one of ${DIRECTIONS.join(', ')}`),
  content: str,
  sent_at: v.pipe(
    v.string('expected an RFC 3339 date-time with offset'),
    v.check((s) => parseRfc3339(s) !== null, 'expected an RFC 3339 date-time with offset'),
  ),
});
