/**
 * The settings table (src/settings-table.ts), its generated page (docs/reference/configuration.md) and the
 * environment variables src/ reads agree: every declared setting is on the page with the table's type and default,
 * the page lists nothing the table does not, every `GRANARY_*` name in src/ is declared (but the internal ones
 * below), loadConfig with an empty environment gives the table's defaults, and every Config field comes from a
 * declared setting.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_DOCS_PATH, renderConfigDocs } from '../../scripts/gen-config-docs.js';
import { loadConfig } from '../../src/config.js';
import { defaultText, SETTINGS, typeText, type Setting } from '../../src/settings-table.js';

/**
 * `GRANARY_*` names in src/ that are not settings: GRANARY_WORKER_SLOT is set by the primary for each worker
 * process it forks (workers/primary.ts), never by an operator.
 */
const INTERNAL = new Set(['GRANARY_WORKER_SLOT']);

/** Prefixes written in comments for a family of settings (`GRANARY_FOP_*`, `GRANARY_S3_*`). */
const FAMILY = /^GRANARY_[A-Z0-9]+_$/;

interface PageRow {
  type: string;
  default: string;
  unit: string;
  description: string;
}

/** The page's setting rows: `| \`NAME\` | type | default | unit | description |`. */
function pageRows(page: string): Map<string, PageRow> {
  const rows = new Map<string, PageRow>();
  for (const line of page.split('\n')) {
    const m = /^\| `([A-Z][A-Z0-9_]*)` \| (.*) \| (.*) \| (.*) \| (.*) \|$/.exec(line);
    if (!m) continue;
    expect(rows.has(m[1] ?? ''), `${m[1]} listed twice`).toBe(false);
    rows.set(m[1] ?? '', { type: m[2] ?? '', default: m[3] ?? '', unit: m[4] ?? '', description: m[5] ?? '' });
  }
  return rows;
}

/** Every `GRANARY_[A-Z0-9_]+` in the .ts files under src/. */
function namesInSrc(): Set<string> {
  const root = fileURLToPath(new URL('../../src', import.meta.url));
  const names = new Set<string>();
  for (const f of readdirSync(root, { recursive: true }) as string[]) {
    if (!f.endsWith('.ts')) continue;
    for (const m of readFileSync(join(root, f), 'utf8').matchAll(/GRANARY_[A-Z0-9_]+/g)) names.add(m[0]);
  }
  return names;
}

const page = readFileSync(CONFIG_DOCS_PATH, 'utf8');
const rows = pageRows(page);
const declared = new Set(SETTINGS.map((s) => s.name));

describe('the settings table', () => {
  it('declares each name once, with a description', () => {
    expect(declared.size).toBe(SETTINGS.length);
    expect(SETTINGS.length).toBeGreaterThanOrEqual(75);
    for (const s of SETTINGS) {
      expect(s.name).toMatch(/^(GRANARY|AWS)_[A-Z0-9_]+$/);
      expect(s.description.length, s.name).toBeGreaterThan(10);
      if (s.kind === 'int' && s.default !== 'cores') {
        expect(s.default, s.name).toBeGreaterThanOrEqual(s.min);
        expect(s.default, s.name).toBeLessThanOrEqual(s.max);
      }
    }
  });

  it('holds every GRANARY_ name read in src/ (but the internal ones)', () => {
    const missing: string[] = [];
    for (const name of namesInSrc()) {
      if (INTERNAL.has(name)) continue;
      if (FAMILY.test(name)) {
        expect([...declared].some((d) => d.startsWith(name)), `no setting of the family ${name}*`).toBe(true);
      } else if (!declared.has(name)) missing.push(name);
    }
    expect(missing).toEqual([]);
    for (const name of INTERNAL) expect(declared.has(name), `${name} is internal`).toBe(false);
  });

  it('gives loadConfig its defaults: every integer and string setting fills its Config field with its default', () => {
    const cfg = loadConfig({}) as unknown as Record<string, unknown>;
    const s3 = loadConfig({ GRANARY_BLOBS: 's3://bucket-a' }).blobs as unknown as Record<string, unknown>;
    let checked = 0;
    for (const s of SETTINGS) {
      if (s.field === undefined || s.kind === 'custom') continue;
      const expected = s.kind === 'int' ? (s.default === 'cores' ? availableParallelism() : s.default) : s.default;
      const got = s.field.startsWith('blobs.') ? s3[s.field.slice('blobs.'.length)] : cfg[s.field];
      if (s.name === 'GRANARY_DATA_DIR') expect(got, s.name).toBe(resolve(String(expected)));
      else if (s.field !== 'blobs.credentials') expect(got, s.name).toBe(expected);
      checked++;
    }
    expect(checked).toBeGreaterThan(50);
    // Loopback by default, whatever GRANARY_HOST is (the console is an administration surface).
    expect(cfg.consoleHost).toBe('127.0.0.1');
  });

  it('puts each integer and string setting\'s value in its own Config field', () => {
    for (const s of SETTINGS) {
      if (s.field === undefined || s.kind === 'custom' || s.field === 'blobs.credentials') continue;
      // An in-range value other than the default, and not 0 (GRANARY_CONSOLE_PORT=0 leaves its field out).
      const low = Math.max(s.kind === 'int' ? s.min : 0, 1);
      const value = s.kind === 'int' ? (s.default === low ? low + 1 : low) : 'some-value';
      const base = s.field.startsWith('blobs.') ? { GRANARY_BLOBS: 's3://bucket-a' } : {};
      const cfg = loadConfig({ ...base, [s.name]: String(value) });
      const record = (s.field.startsWith('blobs.') ? cfg.blobs : cfg) as unknown as Record<string, unknown>;
      const got = record[s.field.replace(/^blobs\./, '')];
      expect(got, s.name).toBe(s.name === 'GRANARY_DATA_DIR' ? resolve(String(value)) : value);
    }
  });

  it('fills every Config field (and every S3 blobs field the URL does not give) from a declared setting', () => {
    const full = loadConfig({
      GRANARY_ACCESS_KEY: 'ak', GRANARY_SECRET_KEY: 'sk', GRANARY_PUBLIC_URL: 'http://h:1', GRANARY_FFMPEG: '/f',
      GRANARY_FFPROBE: '/p', GRANARY_HEIF_CONVERT: '/h', GRANARY_METRICS_TOKEN: 't',
      GRANARY_BLOBS: 's3://bucket-a/p?endpoint=http://h:9&region=r', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b',
    });
    const fields = new Set(SETTINGS.map((s) => s.field));
    const fromUrl = ['kind', 'bucket', 'prefix', 'endpoint', 'region', 'forcePathStyle'];
    const missing = [
      ...Object.keys(full).filter((k) => !fields.has(k as Setting['field'])),
      ...Object.keys(full.blobs).filter((k) => !fromUrl.includes(k) && !fields.has(`blobs.${k}` as Setting['field'])),
    ];
    expect(missing).toEqual([]);
  });

  it('rejects a value outside an integer setting\'s range, naming the variable', () => {
    for (const s of SETTINGS) {
      if (s.kind !== 'int' || s.name.startsWith('GRANARY_S3_')) continue;
      expect(() => loadConfig({ [s.name]: String(s.max + 1) }), s.name).toThrow(s.name);
      if (s.min > 0) expect(() => loadConfig({ [s.name]: String(s.min - 1) }), s.name).toThrow(s.name);
    }
  });
});

describe('docs/reference/configuration.md', () => {
  it('is the generator\'s output (run npx tsx scripts/gen-config-docs.ts)', () => {
    expect(page).toBe(renderConfigDocs());
  });

  it('lists every setting of the table with its type and default', () => {
    for (const s of SETTINGS) {
      const row = rows.get(s.name);
      expect(row, `${s.name} missing from the page`).toBeDefined();
      expect(row?.default, s.name).toBe(defaultText(s));
      expect(row?.type, s.name).toBe(typeText(s));
      expect(row?.unit, s.name).toBe(s.unit ?? '');
    }
  });

  it('lists no setting the table does not declare', () => {
    expect([...rows.keys()].filter((name) => !declared.has(name))).toEqual([]);
    expect(rows.size).toBe(SETTINGS.length);
  });

  it('shows integer defaults as the numbers loadConfig uses', () => {
    for (const s of SETTINGS) {
      if (s.kind !== 'int' || s.default === 'cores') continue;
      expect(rows.get(s.name)?.default, s.name).toMatch(new RegExp(`^\`${s.default}\`( \\(\\d+ [KMG]iB(/s)?\\))?$`));
    }
  });
});
