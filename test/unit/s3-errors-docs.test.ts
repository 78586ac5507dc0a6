/**
 * The S3 error table of docs/reference/s3-compatibility.md ("Errors") and the S3 error catalogue
 * (src/s3api/errors.ts) agree both ways, like the Kodo catalogue and docs/reference/errors.md
 * (errors-docs.test.ts): every code the S3 listener can answer is listed with its status and when it is answered,
 * and the page lists no code the catalogue lacks.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { s3Catalogue } from '../../src/s3api/errors.js';

const PAGE = fileURLToPath(new URL('../../docs/reference/s3-compatibility.md', import.meta.url));

/** The rows `| \`Code\` | status | when |` of the page's "Errors" section. */
function tableRows(page: string): Map<string, { status: number; when: string }> {
  const start = page.indexOf('\n## Errors\n');
  expect(start, 'the page has an "## Errors" section').toBeGreaterThan(0);
  const end = page.indexOf('\n## ', start + 1);
  const rows = new Map<string, { status: number; when: string }>();
  for (const line of page.slice(start, end < 0 ? undefined : end).split('\n')) {
    const m = /^\| `([A-Za-z0-9]+)` \| (\d{3}) \| (.*) \|$/.exec(line);
    if (!m) continue;
    expect(rows.has(m[1]!), `${m[1]} listed twice`).toBe(false);
    rows.set(m[1]!, { status: Number(m[2]), when: m[3]!.trim() });
  }
  return rows;
}

describe('the S3 errors table of docs/reference/s3-compatibility.md', () => {
  const rows = tableRows(readFileSync(PAGE, 'utf8'));
  const catalogue = s3Catalogue();

  it('lists every code of the catalogue with its status and when it is answered', () => {
    for (const { code, status } of catalogue) {
      expect(rows.get(code), `${code} is missing from the page`).toBeDefined();
      expect(rows.get(code)!.status, code).toBe(status);
      expect(rows.get(code)!.when.length, `${code} says when`).toBeGreaterThan(10);
    }
  });

  it('lists no code the catalogue lacks', () => {
    const codes = new Set(catalogue.map((e) => e.code as string));
    expect([...rows.keys()].filter((c) => !codes.has(c))).toEqual([]);
  });
});
