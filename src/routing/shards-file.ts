/**
 * The shard assignment, one JSON file shared by the proxy configuration (`npm run routing`) and
 * the replicas (their ORGANIZATIONS value comes from it):
 *
 *   { "shards": [ { "name": "a", "upstreams": ["10.0.0.1:3000", "10.0.0.2:3000"],
 *                   "organizations": ["<uuid>", ...] }, ... ] }
 *
 * Every organization belongs to exactly one shard; a shard's upstreams are its replicas' public
 * listeners (host:port), all holding the same organizations.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as v from 'valibot';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// host:port with a host name, IPv4, or [IPv6]; nothing nginx would read as another directive.
const UPSTREAM = /^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})$/;

const ShardSchema = v.object({
  name: v.pipe(v.string(), v.regex(/^[a-z0-9_]{1,32}$/, 'must be 1-32 characters of [a-z0-9_]')),
  upstreams: v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.check(
          (s) => UPSTREAM.test(s) && +s.slice(s.lastIndexOf(':') + 1) <= 65535 && +s.slice(s.lastIndexOf(':') + 1) >= 1,
          'must be host:port',
        ),
      ),
    ),
    v.minLength(1, 'must list at least one host:port'),
  ),
  organizations: v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.regex(UUID, 'must be a UUID'),
        v.transform((s) => s.toLowerCase()),
      ),
    ),
    // its replicas' ORGANIZATIONS would be empty, which a server refuses to start with
    v.minLength(1, 'must list at least one organization (its replicas could not start with an empty ORGANIZATIONS)'),
  ),
});

const ShardsSchema = v.object({ shards: v.pipe(v.array(ShardSchema), v.minLength(1, 'must list at least one shard')) });

export type Shard = v.InferOutput<typeof ShardSchema>;
export interface Shards {
  shards: Shard[];
}

/** Validates a parsed shards document; throws one Error listing every problem with its JSON path. */
export function parseShards(doc: unknown, where: string): Shards {
  const r = v.safeParse(ShardsSchema, doc);
  if (!r.success) {
    const lines = r.issues.map((i) => {
      const at = (i.path ?? []).map((p) => (typeof p.key === 'number' ? `[${p.key}]` : `.${String(p.key)}`)).join('');
      return `${where}: ${at || '(top level)'} ${i.message}${i.input !== undefined && typeof i.input !== 'object' ? `, got ${JSON.stringify(i.input)}` : ''}`;
    });
    throw new Error(lines.join('\n'));
  }
  const problems: string[] = [];
  // where each organization first appeared, as a JSON path (errors name the path, README)
  const owner = new Map<string, { shard: string; at: string }>();
  const names = new Map<string, number>();
  // a replica serves one shard (its ORGANIZATIONS): an upstream in two shards misroutes one of them
  const upstreams = new Map<string, string>();
  for (const [i, s] of r.output.shards.entries()) {
    for (const [j, u] of s.upstreams.entries()) {
      // (a leading dot, as the schema's own messages write a path)
      const at = `.shards[${i}].upstreams[${j}]`;
      const first = upstreams.get(u.toLowerCase());
      if (first !== undefined)
        problems.push(`${where}: ${at}: upstream ${JSON.stringify(u)} is also ${first}: a replica serves one shard`);
      else upstreams.set(u.toLowerCase(), at);
    }
    const first = names.get(s.name);
    if (first !== undefined)
      problems.push(
        `${where}: .shards[${i}].name: shard name ${JSON.stringify(s.name)} is used twice (also .shards[${first}].name)`,
      );
    else names.set(s.name, i);
    for (const [j, org] of s.organizations.entries()) {
      const at = `.shards[${i}].organizations[${j}]`;
      const other = owner.get(org);
      if (other !== undefined)
        problems.push(
          `${where}: ${at}: organization ${org} is in shards ${JSON.stringify(other.shard)} (${other.at}) and ${JSON.stringify(s.name)}`,
        );
      else owner.set(org, { shard: s.name, at });
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return r.output;
}

/** Reads and validates a shards file; errors start with "routing: <file>". */
export function readShardsFile(file: string): Shards {
  const where = `routing: ${path.basename(file)}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${where}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // a UTF-8 byte order mark, which some editors write, as the import files accept it
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: not valid JSON${placeOf(text, (err as Error).message)}: ${(err as Error).message}`);
  }
  return parseShards(doc, where);
}

/**
 * ` at line L, column C` for a JSON.parse failure of `text`, so an operator finds the mistake in an
 * edited file without counting characters; '' when it cannot be placed. V8 names a position for
 * most mistakes; for an unexpected token it quotes the text around it instead, and the token is the
 * last character of the shortest prefix that fails before its own end (every longer prefix fails
 * there too, so a binary search finds it in a few parses).
 */
export function placeOf(text: string, message: string): string {
  let at = statedPosition(message, text.length);
  if (at < 0 && /^Unexpected token/.test(message)) at = unexpectedTokenAt(text);
  if (at < 0 || at > text.length) return '';
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  // in characters (code points), as an editor counts them, not UTF-16 units
  const column = Array.from(before.slice(before.lastIndexOf('\n') + 1)).length + 1;
  return ` at line ${line}, column ${column}`;
}

/** The index of the token JSON.parse stops at in `text`, or -1 if no prefix fails before its end. */
function unexpectedTokenAt(text: string): number {
  let lo = 1;
  let hi = text.length;
  if (!failsBeforeEnd(text.slice(0, hi))) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (failsBeforeEnd(text.slice(0, mid))) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

/** Whether `prefix` holds a mistake of its own, not merely an end that comes too soon. */
function failsBeforeEnd(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return false;
  } catch (err) {
    // (no position named: an unexpected token, which is before the end)
    return statedPosition((err as Error).message, prefix.length) < prefix.length;
  }
}

/** Where a JSON.parse message of a text of `length` says it stopped: its position, the end, or -1. */
function statedPosition(message: string, length: number): number {
  const m = /at position (\d+)/.exec(message);
  return m !== null ? Number(m[1]) : /end of JSON input/.test(message) ? length : -1;
}
