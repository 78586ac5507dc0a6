/**
 * The console's Simplified Chinese texts (console/src/zh.ts): every literal passed to `t('…')` in the app has a
 * translation, and every translation is used — a literal of the app (label tables included) or a text the server
 * sends that the app translates (the job `desc` of jobs/record.ts) — so no stale entries pile up.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ZH } from '../../console/src/zh.js';
import { JOB_DESC } from '../../src/jobs/record.js';

const SRC = new URL('../../console/src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.tsx?$/.test(e.name) && e.name !== 'zh.ts' ? [readFileSync(join(dir, e.name), 'utf8')] : [],
  );
}

describe('console translations', () => {
  const code = sources(SRC).join('\n');
  const literals = new Set([...code.matchAll(/\bt\('((?:[^'\\]|\\.)+)'/g)].map((m) => m[1]!.replace(/\\'/g, "'")));

  it('has a Chinese text for every t() literal', () => {
    const missing = [...literals].filter((s) => !(s in ZH));
    expect(missing).toEqual([]);
  });

  it('has no translation that the app never shows', () => {
    const fromServer = new Set(Object.values(JOB_DESC));
    const unused = Object.keys(ZH).filter((s) => !literals.has(s) && !code.includes(`'${s}'`) && !fromServer.has(s));
    expect(unused).toEqual([]);
  });

  it('keeps every {placeholder} of the English text', () => {
    for (const [en, zh] of Object.entries(ZH)) {
      const names = (s: string): string[] => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();
      expect(names(zh), en).toEqual(names(en));
    }
  });
});
