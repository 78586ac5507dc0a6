/**
 * The IAM column of the route tables (docs/reference/iam.md, "Actions of each door"): walking every table — the
 * Kodo routes and their plugin routes, the console's, the S3 listener's — no route lacks its `iam` entry; every
 * Kodo action a route names is in the catalogue (src/iam/actions.ts); every S3 action maps to one through the one
 * table (src/iam/operation-actions.ts); every rs op has an action; and routes that name a bucket, take a credential
 * and need no action are only those that filter what the caller may see.
 */
import { describe, expect, it } from 'vitest';
import { kodoAction } from '../../src/iam/actions.js';
import { OP_NAMES } from '../../src/roles/rs/ops.js';
import { RS_OP_ACTIONS, S3_ACTIONS, kodoActionOfS3 } from '../../src/iam/operation-actions.js';
import { CONSOLE_LISTENER_ROUTES, CONSOLE_PLUGIN_ROUTES, CONSOLE_ROUTES, KODO_PLUGIN_ROUTES, KODO_ROUTES } from '../../src/routes/table.js';
import type { RouteFacts } from '../../src/routes/types.js';
import { ROUTES as S3_ROUTES } from '../../src/s3api/routes.js';

const TABLES: Array<[string, readonly RouteFacts[]]> = [
  ['kodo', KODO_ROUTES],
  ['kodo plugins', KODO_PLUGIN_ROUTES],
  ['console', CONSOLE_ROUTES],
  ['console listener', CONSOLE_LISTENER_ROUTES],
  ['console plugins', CONSOLE_PLUGIN_ROUTES],
];

const fakeRequest = (op: string) => ({ params: { op } }) as never;

describe('the IAM column of the route tables', () => {
  for (const [name, table] of TABLES) {
    it(`${name}: every route declares its IAM action, a known one`, () => {
      expect(table.length).toBeGreaterThan(0);
      for (const r of table) {
        const iam = (r as Partial<RouteFacts>).iam;
        expect(iam, `${r.operation} ${r.url}`).toBeDefined();
        if (iam === 'none' || iam === 'owner-only') continue;
        expect(iam, r.operation).toBeTypeOf('object');
        if ('each' in iam!) continue;
        const action = typeof iam!.action === 'string' ? iam!.action : iam!.action(fakeRequest('delete'));
        expect(kodoAction(action), `${r.operation}: ${action}`).toBeDefined();
      }
    });
  }

  it('routes with a credential and a bucket rule name an action (none only where the caller sees its own)', () => {
    for (const [, table] of TABLES) {
      for (const r of table) {
        if (r.bucket.from !== 'param' && r.bucket.from !== 'query') continue;
        expect(typeof r.iam, `${r.operation} authorises a bucket without an action`).toBe('object');
      }
    }
  });

  it('routes without a credential name no action but the ones checked by their own path', () => {
    for (const [, table] of TABLES) {
      for (const r of table) {
        if (r.auth === 'none' || r.auth === 'console-signin' || r.auth === 'metrics-token' || r.auth === 'console-session-optional') {
          expect(r.iam, r.operation).toBe('none');
        }
        if (r.auth === 'uploadToken' || r.auth === 'download') expect(typeof r.iam, r.operation).toBe('object');
      }
    }
  });

  it('the IAM administration and key pair routes are the account’s own', () => {
    const own = [...KODO_ROUTES, ...CONSOLE_ROUTES].filter((r) => r.url.startsWith('/iam/v1/') || r.url.startsWith('/api/keys') || r.operation === 'uc.mkbucket' || r.operation === 'console.buckets.create');
    expect(own.length).toBeGreaterThan(44);
    for (const r of own) expect(r.iam, r.operation).toBe('owner-only');
  });

  it('every rs op has a Kodo action', () => {
    for (const op of OP_NAMES) expect(kodoAction(RS_OP_ACTIONS[op] ?? ''), op).toBeDefined();
  });

  it('S3: every route declares an S3 action mapped to a Kodo action (one table), owner-only or none', () => {
    for (const r of S3_ROUTES) {
      const iam = (r as { iam?: string }).iam;
      expect(iam, r.operation).toBeDefined();
      if (iam === 'none' || iam === 'owner-only') continue;
      expect(kodoAction(kodoActionOfS3(iam!) ?? ''), `${r.operation}: ${iam}`).toBeDefined();
    }
    for (const [s3, kodo] of Object.entries(S3_ACTIONS)) {
      expect(s3).toMatch(/^s3:[A-Za-z]+$/);
      expect(kodoAction(kodo), s3).toBeDefined();
    }
    expect(S3_ROUTES.find((r) => r.operation === 'CreateBucket')?.iam).toBe('owner-only');
  });
});
