/**
 * `npm run keys -- create | revoke | list` (CONTRACT 8, 10). Exit codes: 0 done, 1 failed
 * (unknown prefix, store problem, bad environment), 2 usage error.
 */
import type { ParseArgsConfig } from 'node:util';
import * as v from 'valibot';
import { generateKey, KNOWN_SCOPES, PREFIX_PATTERN } from '../auth/api-key.js';
import { type KeyRecord, keyRecordProblem } from '../auth/key-record.js';
import { type Config, ConfigError, loadConfig } from '../config/config.js';
import type { KeyStore } from '../auth/key-store.js';
import { openStores } from '../store/open-store.js';
import type { Stores } from '../store/stores.js';
import { parseRequestInstant } from '../time/rfc3339.js';
import { UUID } from '../model/organization-id.js';
import { visibleText } from '../text/visible.js';
import { newDataDirNote, parseOptions, UsageError } from './args.js';
import { endQuietlyOnClosedOutput, stdoutDiscarded, writeStdoutSync } from './closed-stdout.js';

const USAGE = `usage:
  npm run keys -- create --organization-id UUID [--organization-id UUID ...] --scopes contacts:read,messages:read [--name TEXT] [--expires-at ISO] [--json]
  npm run keys -- revoke PREFIX
  npm run keys -- list [--json]`;

class Failure extends Error {}

const CreateSchema = v.object({
  organizationIds: v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.regex(UUID, (i) => `--organization-id must be a UUID, got ${JSON.stringify(i.input)}`),
        v.toLowerCase(),
      ),
    ),
    v.minLength(1, '--organization-id is required (repeat it for several organizations)'),
    v.transform((ids) => [...new Set(ids)]),
  ),
  scopes: v.pipe(
    v.string('--scopes is required, e.g. --scopes contacts:read,messages:read'),
    v.transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    ),
    v.array(
      v.picklist(
        KNOWN_SCOPES,
        (i) => `--scopes: unknown scope ${JSON.stringify(i.input)} (known: ${KNOWN_SCOPES.join(', ')})`,
      ),
    ),
    v.minLength(1, `--scopes must name at least one of ${KNOWN_SCOPES.join(', ')}`),
    v.transform((s) => [...new Set(s)]),
  ),
  name: v.optional(v.pipe(v.string(), v.maxLength(200, '--name must be at most 200 characters')), ''),
  expiresAt: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => ({ raw: s, ms: parseRequestInstant(s, false) })),
      v.check(
        (x) => x.ms !== null,
        (i) =>
          `--expires-at must be an ISO 8601 date-time or YYYY-MM-DD, got ${JSON.stringify((i.input as { raw: string }).raw)}`,
      ),
      v.check(
        (x) => x.ms! > Date.now(),
        (i) => `--expires-at must be in the future, got ${JSON.stringify((i.input as { raw: string }).raw)}`,
      ),
      // stored as RFC 3339: 9999-12-31T23:59:59-01:00 is in year 10000 once in UTC, and was
      // stored as "+010000-01-01T00:59:59.000Z" (a review)
      v.check(
        (x) => new Date(x.ms!).getUTCFullYear() <= 9999,
        (i) =>
          `--expires-at must fall before the year 10000 once in UTC, got ${JSON.stringify((i.input as { raw: string }).raw)}`,
      ),
      v.transform((x) => new Date(x.ms!).toISOString()),
    ),
  ),
});

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  // every option but --organization-id takes one value
  return parseOptions({ args, options, allowPositionals: true, strict: true });
}

/** The public view of a record: never the hash. */
function publicRecord(r: KeyRecord) {
  return {
    prefix: r.prefix,
    name: r.name,
    organization_ids: r.organization_ids,
    scopes: r.scopes,
    created_at: r.created_at,
    expires_at: r.expires_at,
    revoked_at: r.revoked_at,
    last_used_at: r.last_used_at,
  };
}

async function create(args: string[], store: () => Promise<KeyStore>): Promise<void> {
  const { values, positionals } = parse(args, {
    'organization-id': { type: 'string', multiple: true },
    scopes: { type: 'string' },
    name: { type: 'string' },
    'expires-at': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length > 0) throw new UsageError(`create: unexpected argument ${JSON.stringify(positionals[0])}`);
  const result = v.safeParse(
    CreateSchema,
    {
      organizationIds: values['organization-id'] ?? [],
      scopes: values.scopes,
      name: values.name,
      expiresAt: values['expires-at'],
    },
    { abortPipeEarly: true },
  );
  if (!result.success) throw new UsageError(result.issues.map((i) => i.message).join('\n'));
  const input = result.output;
  const fresh = generateKey();
  const record: KeyRecord = {
    prefix: fresh.prefix,
    name: input.name,
    hash: fresh.hash,
    organization_ids: input.organizationIds,
    scopes: input.scopes,
    created_at: new Date().toISOString(),
    expires_at: input.expiresAt ?? null,
    revoked_at: null,
    last_used_at: null,
  };
  // the key is shown once: not made when it would go nowhere
  if (stdoutDiscarded())
    throw new Failure(
      'keys: create: standard output is /dev/null or closed, so the new key would never be shown; nothing was created',
    );
  const s = await store();
  if (await s.getKey(record.prefix)) throw new Failure('keys: generated prefix already exists, run the command again');
  await s.putKey(record);
  const { revoked_at: _r, last_used_at: _l, ...shown } = publicRecord(record);
  const text = values.json
    ? JSON.stringify({ key: fresh.key, ...shown }) + '\n'
    : `Created API key ${record.prefix}${record.name ? ` (${visibleText(record.name)})` : ''}\n` +
      `  organizations: ${record.organization_ids.join(', ')}\n` +
      `  scopes:        ${record.scopes.join(', ')}\n` +
      `  expires:       ${record.expires_at ?? 'never'}\n\n` +
      `This is the only time the key is shown; store it now:\n\n  ${fresh.key}\n`;
  try {
    writeStdoutSync(text);
  } catch (err) {
    // not shown (a closed pipe, a full disk): a stored key nobody has would stay usable; revoke it
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const revoked = await s.revokeKey(record.prefix, new Date().toISOString()).then(
      () => `key ${record.prefix} was revoked, nothing usable was created`,
      (e: Error) =>
        `key ${record.prefix} is stored but could not be revoked (${e.message}): run npm run keys -- revoke ${record.prefix}`,
    );
    throw new Failure(`keys: create: could not write the new key to standard output (${why}); ${revoked}`);
  }
}

async function revoke(args: string[], store: () => Promise<KeyStore>): Promise<void> {
  const { positionals } = parse(args, {});
  if (positionals.length !== 1) throw new UsageError('revoke: give exactly one key prefix');
  const prefix = positionals[0];
  if (!PREFIX_PATTERN.test(prefix))
    throw new UsageError(`revoke: a prefix is 8 characters of a-z and 0-9, got ${JSON.stringify(prefix)}`);
  const s = await store();
  const existing = await s.getKey(prefix);
  if (!existing) throw new Failure(`keys: no key with prefix ${prefix}`);
  // (a stand-in for a record not JSON has no revoked_at: it was "already revoked at undefined")
  const problem = keyRecordProblem(existing);
  if (problem !== null)
    throw new Failure(
      `keys: the record of key ${prefix} is malformed (${visibleText(problem)}); servers refuse it; fix or delete it in the store`,
    );
  if (existing.revoked_at !== null) {
    process.stdout.write(`Key ${prefix} was already revoked at ${existing.revoked_at}\n`);
    return;
  }
  const at = new Date().toISOString();
  if (!(await s.revokeKey(prefix, at))) throw new Failure(`keys: no key with prefix ${prefix}`);
  process.stdout.write(`Revoked key ${prefix} at ${at}; running servers refuse it within 2 seconds\n`);
}

async function list(args: string[], store: () => Promise<KeyStore>): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError(`list: unexpected argument ${JSON.stringify(positionals[0])}`);
  const all = await (await store()).listKeys();
  // A record servers refuse (hand-edited, damaged) is named on stderr after the others, and the
  // exit is 1, as `snapshot list` does with an unreadable pointer (it crashed the listing).
  const problems = all.map((r) => keyRecordProblem(r));
  const malformed = all.flatMap((r, i) =>
    problems[i] === null ? [] : [`${typeof r?.prefix === 'string' ? r.prefix : '(no prefix)'}: ${problems[i]}`],
  );
  const records = all
    .filter((_, i) => problems[i] === null)
    // (what servers do not read may be anything in a hand-edited record: shown as empty)
    .map((r) => ({
      ...r,
      name: typeof r.name === 'string' ? r.name : '',
      created_at: typeof r.created_at === 'string' ? r.created_at : '',
      last_used_at: typeof r.last_used_at === 'string' ? r.last_used_at : null,
    }))
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  try {
    listRecords(records, values.json === true);
  } finally {
    for (const m of malformed)
      process.stderr.write(`keys: list: malformed key record, not listed (servers refuse it): ${visibleText(m)}\n`);
  }
  return malformed.length > 0 ? 1 : 0;
}

function listRecords(records: KeyRecord[], json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(records.map(publicRecord)) + '\n');
    return;
  }
  if (records.length === 0) {
    process.stdout.write('No API keys.\n');
    return;
  }
  const now = Date.now();
  for (const r of records) {
    const state = r.revoked_at
      ? `revoked ${r.revoked_at}`
      : r.expires_at && Date.parse(r.expires_at) <= now
        ? `expired ${r.expires_at}`
        : 'active';
    process.stdout.write(
      `${r.prefix}  ${state}  ${JSON.stringify(r.name)}\n` +
        `  organizations: ${r.organization_ids.join(', ')}\n  scopes: ${r.scopes.join(', ')}\n` +
        `  created ${r.created_at}, expires ${r.expires_at ?? 'never'}, last used ${r.last_used_at ?? 'never'}\n`,
    );
  }
}

/** The keys of an embedded store whose folder does not exist: none (list and revoke only read). */
const NO_KEYS: KeyStore = {
  putKey: () => Promise.reject(new Error('keys: no store to write to')),
  getKey: () => Promise.resolve(null),
  listKeys: () => Promise.resolve([]),
  revokeKey: () => Promise.resolve(false),
  touchKeys: () => Promise.resolve(),
};

/** Each command and the exit code it ends with (list: 1 when it named malformed records). */
const COMMANDS: Record<string, (args: string[], store: () => Promise<KeyStore>) => Promise<number>> = {
  create: (args, store) => create(args, store).then(() => 0),
  revoke: (args, store) => revoke(args, store).then(() => 0),
  list,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(`keys: missing command\n${USAGE}\n`);
    return 2;
  }
  if (
    command === '--help' ||
    command === '-h' ||
    command === 'help' ||
    rest.includes('--help') ||
    rest.includes('-h')
  ) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const run = COMMANDS[command];
  const holder: { stores: Stores | null } = { stores: null };
  try {
    if (!run) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    // The store opens only after the arguments are valid, so usage errors never touch it.
    const store = async (): Promise<KeyStore> => {
      if (holder.stores) return holder.stores.keys;
      let config: Config;
      try {
        config = loadConfig();
      } catch (err) {
        if (err instanceof ConfigError) throw new Failure(err.problems.join('\n'));
        throw err;
      }
      // creating a key makes the folder; listing or revoking in one that is not there says so,
      // and answers from no keys without making it (the next run with the same typo would be
      // silent: an audit)
      if (command !== 'create') {
        const note = await newDataDirNote('keys', config);
        if (note !== null) {
          process.stderr.write(note);
          return NO_KEYS;
        }
      }
      holder.stores = await openStores(config, undefined, command === 'list' ? 'read' : 'write');
      return holder.stores.keys;
    };
    return await run(rest, store);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`keys: ${err.message.replace(/\n/g, '\nkeys: ')}\n${USAGE}\n`);
      return 2;
    }
    const message = (err as Error).message ?? String(err);
    process.stderr.write(
      (message.startsWith('keys:') || message.startsWith('config:') ? message : `keys: ${message}`) + '\n',
    );
    return 1;
  } finally {
    if (holder.stores) await holder.stores.close().catch(() => undefined);
  }
}

endQuietlyOnClosedOutput();
process.exitCode = await main(process.argv.slice(2));
