/**
 * Every relative link of README.md and docs/**\/*.md resolves: the file (or directory) exists, and a `#anchor`
 * into a Markdown file names one of its headings (GitHub's slugs). Links inside code blocks and code spans are not
 * links; `http:`, `https:` and `mailto:` links are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(): string[] {
  const files = [join(root, 'README.md')];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(root, 'docs'));
  return files;
}

/** The text without fenced code blocks and code spans (their brackets are code, not links). */
function prose(text: string): string {
  return text
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const heading = m[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading keeps its text
      .replace(/<[^>]+>/g, '');
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  // Headings written with inline code keep the code's text in the anchor: add those forms too.
  for (const line of text.split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*$/.exec(line);
    if (m && m[1]!.includes('`')) {
      out.add(m[1]!.replace(/`/g, '').toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
    }
  }
  return out;
}

interface Link {
  file: string;
  target: string;
}

function links(file: string): Link[] {
  const text = prose(readFileSync(file, 'utf8'));
  const out: Link[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    out.push({ file, target });
  }
  return out;
}

function problem(link: Link): string | undefined {
  const [pathPart, fragment] = link.target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? link.file : resolve(dirname(link.file), decodeURIComponent(pathPart));
  const fromRoot = relative(root, path);
  if (fromRoot.startsWith('..')) return 'points outside the repository';
  if (!existsSync(path)) return 'no such file';
  if (fragment !== undefined && fragment !== '' && path.endsWith('.md')) {
    if (!anchors(readFileSync(path, 'utf8')).has(fragment.toLowerCase())) return `no heading #${fragment}`;
  }
  return undefined;
}

describe('documentation links', () => {
  const files = markdownFiles();

  it('finds the README and the docs pages', () => {
    expect(files.length).toBeGreaterThan(30);
  });

  it('resolves every relative link and anchor of README.md and docs/', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const link of links(file)) {
        checked++;
        const why = problem(link);
        if (why) broken.push(`${relative(root, file)}: (${link.target}) ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('keeps the README a front door (under 300 lines)', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThan(300);
  });
});
