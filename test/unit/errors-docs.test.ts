/**
 * docs/reference/errors.md and the error catalogue (src/errors.ts) agree both ways, after fastify's test of its
 * https://github.com/fastify/fastify/blob/main/docs/Reference/Errors.md: every catalogue entry is on the page with
 * its status and message, every error the page lists is in the catalogue, and the page is what
 * scripts/gen-errors-docs.ts writes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { catalogueRows, ERRORS_DOCS_PATH, renderErrorsDocs } from '../../scripts/gen-errors-docs.js';
import { Errors, type ErrorKind } from '../../src/errors.js';
import { ERROR_WHEN } from '../../src/errors-when.js';

interface PageRow {
  status: number;
  message: string;
  when: string;
}

/** The page's rows `| status | \`code\` | \`message\` | when |` (cells split on unescaped `|`). */
function pageRows(page: string): Map<string, PageRow> {
  const rows = new Map<string, PageRow>();
  for (const line of page.split('\n')) {
    if (!/^\| \d{3} \|/.test(line)) continue;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|'));
    expect(cells, line).toHaveLength(4);
    const [status = '', code = '', message = '', when = ''] = cells;
    const kind = /^`([A-Za-z0-9]+)`$/.exec(code)?.[1];
    expect(kind, line).toBeDefined();
    expect(rows.has(kind ?? ''), `${kind} listed twice`).toBe(false);
    const text = /^``? ?(.*?) ?``?$/.exec(message)?.[1] ?? message;
    rows.set(kind ?? '', { status: Number(status), message: text, when });
  }
  return rows;
}

const page = readFileSync(ERRORS_DOCS_PATH, 'utf8');
const rows = pageRows(page);
const kinds = Object.keys(Errors) as ErrorKind[];

describe('docs/reference/errors.md', () => {
  it('is the generator\'s output (run npx tsx scripts/gen-errors-docs.ts)', () => {
    expect(page).toBe(renderErrorsDocs());
  });

  it('lists every catalogue entry with its status, message and when', () => {
    for (const kind of kinds) {
      const row = rows.get(kind);
      expect(row, `${kind} missing from the page`).toBeDefined();
      const err = Errors[kind]();
      expect(row?.status, kind).toBe(err.status);
      expect(row?.message, kind).toBe(err.message);
      expect(row?.when, kind).toBe(ERROR_WHEN[kind]);
    }
  });

  it('lists no error the catalogue does not have', () => {
    expect([...rows.keys()].filter((k) => !(kinds as string[]).includes(k))).toEqual([]);
    expect(rows.size).toBe(kinds.length);
    expect(catalogueRows()).toHaveLength(kinds.length);
  });

  it('says when each error is answered', () => {
    expect(Object.keys(ERROR_WHEN).sort()).toEqual([...kinds].sort());
    for (const kind of kinds) expect(ERROR_WHEN[kind].length, kind).toBeGreaterThan(15);
  });
});
