/**
 * The image's build context: every file the Dockerfile copies from the context is inside it
 * (not left out by .dockerignore). `scripts/bundle-server.mjs` was copied while .dockerignore
 * left out all of `scripts`, so `docker compose up --build` failed at that step (a README audit;
 * no Docker daemon runs where the tests do, so this reads the two files as Docker does).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** One .dockerignore pattern as a RegExp over context-relative paths: `*` within a segment, `**` across. */
function patternOf(p: string): RegExp {
  const body = p
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .map((seg) =>
      seg === '**'
        ? '.*'
        : seg
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
    )
    .join('/');
  // a pattern naming a folder leaves out everything under it too
  return new RegExp(`^${body}(/.*)?$`);
}

/** Whether .dockerignore leaves `file` out of the context: the last pattern that matches decides. */
function ignored(file: string, lines: string[]): boolean {
  let out = false;
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    if (patternOf(negated ? line.slice(1) : line).test(file)) out = !negated;
  }
  return out;
}

test('every file the Dockerfile copies from the build context is in it', () => {
  const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
  const sources: string[] = [];
  for (const line of readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').split('\n')) {
    const m = /^COPY\s+(?!--from)(?:--\S+\s+)*(.+)$/.exec(line.trim());
    if (m === null) continue;
    const parts = m[1].trim().split(/\s+/);
    sources.push(...parts.slice(0, -1)); // the last is the destination
  }
  assert.ok(sources.includes('scripts/bundle-server.mjs'), `the Dockerfile's sources: ${sources.join(' ')}`);
  for (const source of sources) {
    assert.ok(existsSync(path.join(ROOT, source)), `${source} exists`);
    assert.ok(!ignored(source, ignore), `${source} is copied by the Dockerfile but left out by .dockerignore`);
  }
  // and the matcher reads the file as Docker does
  assert.ok(ignored('scripts/gen.ts', ignore));
  assert.ok(ignored('test/unit/x.ts', ignore));
  assert.ok(ignored('npm-debug.log', ignore));
  assert.ok(!ignored('src/main.ts', ignore));
});
