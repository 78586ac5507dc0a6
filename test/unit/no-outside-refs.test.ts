/**
 * Every reference in the code can be followed from a clone of the repository: no relative path to the folder
 * beside it that held the team's notes, nor to the old protocol file kept there, and no tracker issue numbers in src/ or test/ (a comment says
 * what the code does and why, not where it was asked for). Every Markdown file a comment cites is in the repository. Every citation of the protocol reference names a
 * section (and §14 item) that docs/development/kodo-protocol.md has.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SELF = relative(ROOT, fileURLToPath(import.meta.url));
const REFERENCE = 'docs/development/kodo-protocol.md';

/** Text files under `dir` (relative to the repository root), this test file left out. */
function textFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(ROOT, rel))) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const path = join(rel, name);
      const st = statSync(join(ROOT, path));
      if (st.isDirectory()) walk(path);
      else if (path !== SELF && /\.(ts|js|mjs|cjs|lua|sh|md|json|sql|py)$/.test(name)) out.push(path);
    }
  };
  if (existsSync(join(ROOT, dir))) walk(dir);
  return out;
}

/** `file:line: text` for every line of `files` matching `re`. */
function hits(files: string[], re: RegExp): string[] {
  const found: string[] = [];
  for (const file of files) {
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (re.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

const CODE = [...textFiles('src'), ...textFiles('test'), ...textFiles('bench')];
const SRC_AND_TESTS = [...textFiles('src'), ...textFiles('test')];

describe('references stay inside the repository', () => {
  it('finds the files it checks', () => {
    expect(CODE.length).toBeGreaterThan(100);
  });

  it('has no path into the folder beside the repository and no citation of the protocol file kept there', () => {
    expect(hits(CODE, /\.\.\/shared\/|shared\/protocol\.md/)).toEqual([]);
  });

  it('cites the protocol reference by its path in the repository', () => {
    expect(hits(CODE, /(?<![\w-])protocol\.md/)).toEqual([]);
  });

  it('cites only Markdown files the repository has (from its root or from the citing file)', () => {
    // A comment naming `notes.md` that is not in the repository (a file of the team's machine, a page moved or
    // renamed) sends the reader nowhere. Test data (an object key `doc/readme.md`) is code, not a comment.
    const missing: string[] = [];
    for (const file of CODE) {
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const t = line.trim();
          const comment = /^(\*|\/\*|\/\/|#)/.test(t) ? t : t.includes(' // ') ? t.slice(t.indexOf(' // ')) : '';
          for (const m of comment.matchAll(/(?<![\w./-])((?:[\w.-]+\/)*[\w-]+\.md)\b/g)) {
            const cited = m[1]!;
            if (!existsSync(join(ROOT, cited)) && !existsSync(join(ROOT, dirname(file), cited))) missing.push(`${file}:${i + 1}: ${cited}`);
          }
        });
    }
    expect(missing).toEqual([]);
  });

  it('has no tracker issue numbers in src/ or test/', () => {
    expect(hits(SRC_AND_TESTS, /\bissues? \d+\b/i)).toEqual([]);
  });

  it('cites only sections and §14 items that docs/development/kodo-protocol.md has', () => {
    const doc = readFileSync(join(ROOT, REFERENCE), 'utf8');
    const sections = new Set<string>();
    for (const m of doc.matchAll(/^#{2,3} (\d+(?:\.\d+)?)[.\s]/gm)) sections.add(m[1]!);
    const gotchas = doc.slice(doc.indexOf('\n## 14.'), doc.indexOf('\n## 15.'));
    const items = new Set([...gotchas.matchAll(/^(\d+)\. /gm)].map((m) => m[1]!));
    expect(sections.size).toBeGreaterThan(50);
    expect(items.size).toBe(24);
    const missing: string[] = [];
    for (const file of CODE) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      if (!text.includes('kodo-protocol.md')) continue;
      // In a file that cites the reference, every bare § is one of its sections (RFC sections excepted).
      for (const m of text.matchAll(/(RFC \d+ )?§(\d+(?:\.\d+)?)(?: items? (\d+))?/g)) {
        if (m[1]) continue;
        if (!sections.has(m[2]!)) missing.push(`${file}: §${m[2]}`);
        else if (m[2] === '14' && m[3] && !items.has(m[3])) missing.push(`${file}: §14 item ${m[3]}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
