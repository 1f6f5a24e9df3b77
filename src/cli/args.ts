/** Command-line details the tools share. */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Tokens = NonNullable<ReturnType<typeof parseArgs>['tokens']>;

/** Bad usage of a command-line tool: its message, the usage text, exit 2. */
export class UsageError extends Error {}

/**
 * parseArgs (with tokens) whose errors are UsageErrors, refusing an option of `once` given twice
 * (default: every option not `multiple`).
 */
export function parseOptions<C extends ParseArgsConfig>(config: C, once?: readonly string[]) {
  const parsed = (() => {
    try {
      return parseArgs({ ...config, tokens: true as const });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  const names =
    once ??
    Object.entries(config.options ?? {})
      .filter(([, o]) => !o.multiple)
      .map(([name]) => name);
  const repeated = repeatedOption((parsed.tokens ?? []) as Tokens, names);
  if (repeated !== null) throw new UsageError(`--${repeated} given more than once`);
  return parsed;
}

/**
 * The first of `names` given more than once (parseArgs keeps the last value and says nothing:
 * `--scopes a --scopes b` made a key with the second scopes only), or null.
 */
export function repeatedOption(tokens: Tokens, names: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const t of tokens) {
    if (t.kind !== 'option' || !names.includes(t.name)) continue;
    if (seen.has(t.name)) return t.name;
    seen.add(t.name);
  }
  return null;
}

/**
 * A line for stderr when the embedded store's folder does not exist yet: a read-only command
 * (list, reload) would otherwise report an empty store as if all were well, and a mistyped
 * DATA_DIR would go unnoticed. Null when there is nothing to say (Redis, or the folder exists);
 * throws when a file stands where the folder or one of its parents should be.
 * Call it before the store is opened (opening creates the folder).
 */
export function newDataDirNote(tool: string, store: { redisUrl: string | null; dataDir: string }): string | null {
  if (store.redisUrl !== null) return null;
  const dir = path.resolve(store.dataDir);
  // a file where the folder or a parent should be is a mistake to name, as the server's start
  // names it (it read "did not exist (nothing was ever stored there)", or ENOTDIR from a mkdir
  // these commands do not mean to make: audits)
  for (let p = dir; p !== path.dirname(p); p = path.dirname(p))
    if (existsSync(p)) {
      if (!statSync(p).isDirectory())
        throw new Error(
          `store: cannot use DATA_DIR ${JSON.stringify(store.dataDir)}: ${JSON.stringify(p)} is a file, not a folder`,
        );
      if (p === dir) return null;
      break;
    }
  return `${tool}: note: DATA_DIR ${JSON.stringify(dir)} did not exist (nothing was ever stored there): check the path\n`;
}
