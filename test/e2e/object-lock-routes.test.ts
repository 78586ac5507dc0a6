/**
 * Every destructive route is checked against object lock (docs/reference/versioning.md "Object lock"): the test
 * walks the route tables — the Kodo door's (and its plugins'), the console's, the S3 listener's — and takes every
 * route whose IAM action can destroy or replace stored bytes or a version (`DESTRUCTIVE`: delete, move, copy, uploads,
 * fetches, object lifecycle, storage class, bucket drop, lock changes, batch and the console's file ops). Each must
 * have a probe here, or an exemption saying why it cannot destroy a version: a new route of such an action fails the
 * walk until it has one. Each probe runs its request against a version under COMPLIANCE retention (the root key,
 * with `x-amz-bypass-governance-retention` where the door has it) and the version must still be there, byte for
 * byte, afterwards. Bucket lifecycle rules (set through `kodo/BucketSettings` routes, which also carry harmless
 * settings) are probed apart: a rule's expiry on a locked object adds a delete marker, the version stays.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectRetentionCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { kodoActionOfS3 } from '../../src/iam/operation-actions.js';
import { sweepExpired } from '../../src/objects/expiry.js';
import { CONSOLE_LISTENER_ROUTES, CONSOLE_PLUGIN_ROUTES, CONSOLE_ROUTES, KODO_PLUGIN_ROUTES, KODO_ROUTES } from '../../src/routes/table.js';
import type { RouteFacts } from '../../src/routes/types.js';
import { ROUTES as S3_ROUTES } from '../../src/s3api/routes.js';
import { ConsoleClient, startConsole, type ConsoleServer } from '../helpers/console.js';
import { entry, put as formPut, rawOp } from '../helpers/rs.js';
import { s3Client } from '../helpers/s3.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';

/** IAM actions that can destroy or replace stored bytes or a version. */
const DESTRUCTIVE: ReadonlySet<string> = new Set([
  'kodo/Delete',
  'kodo/Move',
  'kodo/Copy',
  'kodo/Upload',
  'kodo/Mkfile',
  'kodo/Fetchfiles',
  'kodo/Prefetch',
  'kodo/ObjectLifecycleSet',
  'kodo/Chtype',
  'kodo/Drop',
  'kodo/Pfop',
  'kodo/ObjectLock',
  'kodo/AbortMultipartUpload',
]);

/** The destructive routes of every table, by operation name. */
function destructiveOperations(): string[] {
  const out = new Set<string>();
  const tables: Array<readonly RouteFacts[]> = [KODO_ROUTES, KODO_PLUGIN_ROUTES, CONSOLE_ROUTES, CONSOLE_LISTENER_ROUTES, CONSOLE_PLUGIN_ROUTES];
  for (const table of tables) {
    for (const r of table) {
      const iam = r.iam;
      if (typeof iam !== 'object') continue;
      // `each` (batch) and an action chosen per request (the console's file ops) can be any op: destructive.
      if ('each' in iam || typeof iam.action !== 'string' || DESTRUCTIVE.has(iam.action)) out.add(r.operation);
    }
  }
  for (const r of S3_ROUTES) {
    const kodo = kodoActionOfS3(r.iam);
    if (kodo !== undefined && DESTRUCTIVE.has(kodo)) out.add(`s3.${r.operation}`);
  }
  return [...out].sort();
}

/** Routes of a destructive action that cannot destroy a version, and why. */
const EXEMPT: Record<string, string> = {
  'up.mkblk': 'stores a piece of an upload session; no version is touched until mkfile commits (probed)',
  'up.bput': 'stores a piece of an upload session; no version is touched until mkfile commits (probed)',
  'up.multipart.initiate': 'opens an upload session; the commit is up.multipart.complete (probed)',
  'up.multipart.part': 'stores a part of an upload session; the commit is up.multipart.complete (probed)',
  'up.multipart.abort': 'drops an upload session and its parts; no version',
  'console.files.uploadToken': 'hands out an upload token; the upload itself is up.form (probed)',
  's3.CreateMultipartUpload': 'opens an upload session; the commit is CompleteMultipartUpload (probed)',
  's3.UploadPart': 'stores a part of an upload session; the commit is CompleteMultipartUpload (probed)',
  's3.UploadPartCopy': 'stores a part of an upload session; the commit is CompleteMultipartUpload (probed)',
  's3.AbortMultipartUpload': 'drops an upload session and its parts; no version',
  's3.GetObjectRetention': 'reads (its action is kodo/Stat; listed only if that changes)',
  'io.prefetch': 'refreshes a key from the mirror source through the same commit as an upload (up.putb64, probed); a lock bucket keeps the replaced version',
  'io.fetch': 'commits the fetched bytes through the same commit as an upload (up.putb64, probed)',
  'api.asyncFetch.submit': 'commits the fetched bytes through the same commit as an upload (up.putb64, probed)',
  'console.fetchTasks.submit': 'commits the fetched bytes through the same commit as an upload (up.putb64, probed)',
  'api.pfop': 'a persistent result (saveas) is committed through the same commit as an upload (up.putb64, probed)',
  'console.jobs.submit': 'a persistent result (saveas) is committed through the same commit as an upload (up.putb64, probed)',
  's3.PostObject': 'commits through the same commit as PutObject (probed); its lock fields are covered by s3-object-lock.test.ts',
};

let s: TestServer;
let s3: S3Client;
let consoleServer: ConsoleServer;
let ui: ConsoleClient;
let dir: string;
let n = 0;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_CONSOLE_PORT: '0' });
  s3 = s3Client(s.s3Url!, AK, SK);
  consoleServer = await startConsole(s);
  ui = new ConsoleClient(consoleServer.url);
  expect((await ui.signIn(AK, SK)).status).toBe(200);
  dir = await mkdtemp(join(tmpdir(), 'lock-routes-'));
}, 60_000);

afterAll(async () => {
  s3?.destroy();
  await consoleServer?.close();
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A lock bucket with one COMPLIANCE-locked version of `key` ('locked'), its id and another bucket's name. */
interface Locked {
  bucket: string;
  key: string;
  versionId: string;
  other: string;
}

const BYTES = 'locked bytes';

async function lockedVersion(): Promise<Locked> {
  const bucket = `lr-${++n}`;
  const other = `lr-${n}-other`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }));
  await s3.send(new CreateBucketCommand({ Bucket: other }));
  const out = await s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: 'locked', Body: BYTES, ObjectLockMode: 'COMPLIANCE', ObjectLockRetainUntilDate: new Date(s.clock.nowMs() + 30 * 86_400_000) }),
  );
  return { bucket, key: 'locked', versionId: out.VersionId!, other };
}

/** The locked version is still there, with its bytes. */
async function expectKept(l: Locked): Promise<void> {
  const got = await s3.send(new GetObjectCommand({ Bucket: l.bucket, Key: l.key, VersionId: l.versionId }));
  expect(await got.Body!.transformToString()).toBe(BYTES);
  expect(got.ObjectLockMode).toBe('COMPLIANCE');
}

/** Expects an S3 call to be refused AccessDenied naming the retention. */
async function expectDenied(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.name).toBe('AccessDenied');
  expect(err?.message).toMatch(/COMPLIANCE retention until \d{4}-/);
}

async function resumable(l: Locked, version: 'v1' | 'v2'): Promise<void> {
  const file = join(dir, `body-${++n}`);
  await writeFile(file, 'resumable overwrite');
  const up = new qiniu.resume_up.ResumeUploader(s.zoneConfig());
  const extra = new qiniu.resume_up.PutExtra();
  extra.version = version;
  const r = await sdk(up.putFile(s.uploadToken({ scope: `${l.bucket}:${l.key}` }), l.key, file, extra));
  expect(r.status).toBe(200);
}

/** What each destructive route's request is, run on a locked version (see the module comment). */
const PROBES: Record<string, (l: Locked) => Promise<void>> = {
  'uc.drop': async (l) => expect((await rawOp(s, `/drop/${l.bucket}`)).status).not.toBe(200),
  'up.form': async (l) => void (await formPut(s, l.bucket, l.key, 'form overwrite')),
  'up.putb64': async (l) => {
    const token = s.uploadToken({ scope: `${l.bucket}:${l.key}` });
    const res = await fetch(`${s.url}/putb64/-1/key/${qiniu.util.urlsafeBase64Encode(l.key)}`, {
      method: 'POST',
      headers: { Authorization: `UpToken ${token}`, 'Content-Type': 'application/octet-stream' },
      body: Buffer.from('putb64 overwrite').toString('base64'),
    });
    expect(res.status).toBe(200);
  },
  'up.mkfile': (l) => resumable(l, 'v1'),
  'up.multipart.complete': (l) => resumable(l, 'v2'),
  'rs.delete': async (l) => expect((await rawOp(s, `/delete/${entry(l.bucket, l.key)}`)).status).toBe(200),
  'rs.move': async (l) => {
    expect((await rawOp(s, `/move/${entry(l.bucket, l.key)}/${entry(l.other, 'moved')}`)).status).toBe(200);
    await formPut(s, l.other, 'back', 'to be moved over');
    expect((await rawOp(s, `/move/${entry(l.other, 'back')}/${entry(l.bucket, l.key)}/force/true`)).status).toBe(200);
  },
  'rs.copy': async (l) => {
    await formPut(s, l.other, 'src', 'copied over');
    expect((await rawOp(s, `/copy/${entry(l.other, 'src')}/${entry(l.bucket, l.key)}/force/true`)).status).toBe(200);
  },
  'rs.chtype': async (l) => expect((await rawOp(s, `/chtype/${entry(l.bucket, l.key)}/type/1`)).status).toBe(200),
  'rs.deleteAfterDays': async (l) => {
    expect((await rawOp(s, `/deleteAfterDays/${entry(l.bucket, l.key)}/1`)).status).toBe(200);
    s.clock.offsetMs += 2 * 86_400_000;
    try {
      await sweepExpired(s.running.g);
    } finally {
      s.clock.offsetMs -= 2 * 86_400_000;
    }
  },
  'rs.lifecycle': async (l) => expect((await rawOp(s, `/lifecycle/${entry(l.bucket, l.key)}/toIAAfterDays/1/deleteAfterDays/2`)).status).toBe(200),
  'rs.batch': async (l) => {
    const ops = [`/delete/${entry(l.bucket, l.key)}`, `/move/${entry(l.bucket, 'nothing')}/${entry(l.bucket, l.key)}/force/true`];
    const a = await rawOp(s, '/batch', { body: ops.map((o) => `op=${encodeURIComponent(o)}`).join('&'), contentType: 'application/x-www-form-urlencoded' });
    expect(a.status).toBeLessThan(300);
  },
  'console.buckets.drop': async (l) => expect((await ui.call('DELETE', `/api/buckets/${l.bucket}`)).status).not.toBeLessThan(300),
  'console.files.op': async (l) => {
    expect((await ui.call('POST', `/api/buckets/${l.bucket}/ops/delete`, { key: l.key })).status).toBeLessThan(300);
    expect((await ui.call('POST', `/api/buckets/${l.bucket}/ops/move`, { key: 'nothing', toKey: l.key, force: true })).status).toBeGreaterThanOrEqual(400);
  },
  'console.versions.delete': async (l) => {
    const res = await ui.call('POST', `/api/buckets/${l.bucket}/versions/delete`, { key: l.key, versionId: l.versionId });
    expect(res.status).toBe(403);
    expect(JSON.stringify(res.body)).toMatch(/COMPLIANCE retention until \d{4}-/);
  },
  'console.versions.restore': async (l) => {
    // Restoring copies a version onto the key: a new version above the locked one, which stays.
    expect((await ui.call('POST', `/api/buckets/${l.bucket}/versions/restore`, { key: l.key, versionId: l.versionId })).status).toBe(200);
  },
  's3.DeleteObject': async (l) => {
    await expectDenied(s3.send(new DeleteObjectCommand({ Bucket: l.bucket, Key: l.key, VersionId: l.versionId, BypassGovernanceRetention: true })));
    expect((await s3.send(new DeleteObjectCommand({ Bucket: l.bucket, Key: l.key }))).DeleteMarker).toBe(true);
  },
  's3.DeleteObjects': async (l) => {
    const out = await s3.send(new DeleteObjectsCommand({ Bucket: l.bucket, BypassGovernanceRetention: true, Delete: { Objects: [{ Key: l.key, VersionId: l.versionId }] } }));
    expect(out.Errors?.map((e) => e.Code)).toEqual(['AccessDenied']);
  },
  's3.PutObject': async (l) => void (await s3.send(new PutObjectCommand({ Bucket: l.bucket, Key: l.key, Body: 'overwrite' }))),
  's3.CopyObject': async (l) => {
    await s3.send(new PutObjectCommand({ Bucket: l.other, Key: 'src', Body: 'copied over' }));
    await s3.send(new CopyObjectCommand({ Bucket: l.bucket, Key: l.key, CopySource: `${l.other}/src` }));
  },
  's3.CompleteMultipartUpload': async (l) => {
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket: l.bucket, Key: l.key }));
    const part = await s3.send(new UploadPartCommand({ Bucket: l.bucket, Key: l.key, UploadId: mp.UploadId, PartNumber: 1, Body: 'part' }));
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: l.bucket, Key: l.key, UploadId: mp.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
  },
  's3.DeleteBucket': async (l) => {
    const err = await s3.send(new DeleteBucketCommand({ Bucket: l.bucket })).then(() => undefined, (e: Error) => e);
    expect(err?.name).toBe('BucketNotEmpty');
  },
  's3.PutObjectRetention': async (l) => {
    for (const Retention of [{ Mode: 'COMPLIANCE' as const, RetainUntilDate: new Date(s.clock.nowMs() + 86_400_000) }, { Mode: 'GOVERNANCE' as const, RetainUntilDate: new Date(s.clock.nowMs() + 60 * 86_400_000) }, {}]) {
      await expectDenied(s3.send(new PutObjectRetentionCommand({ Bucket: l.bucket, Key: l.key, VersionId: l.versionId, Retention, BypassGovernanceRetention: true })));
    }
  },
  's3.PutObjectLegalHold': async (l) => {
    await s3.send(new PutObjectLegalHoldCommand({ Bucket: l.bucket, Key: l.key, VersionId: l.versionId, LegalHold: { Status: 'OFF' } }));
    await expectDenied(s3.send(new DeleteObjectCommand({ Bucket: l.bucket, Key: l.key, VersionId: l.versionId })));
  },
};

describe('every destructive route is checked against object lock', () => {
  it('each destructive route of every table has a probe or a reason it cannot destroy a version', () => {
    const ops = destructiveOperations();
    expect(ops.length).toBeGreaterThan(20);
    expect(ops.filter((op) => PROBES[op] === undefined && EXEMPT[op] === undefined)).toEqual([]);
    // No stale entries: every probe and exemption names a route of the tables.
    expect([...Object.keys(PROBES), ...Object.keys(EXEMPT)].filter((op) => !ops.includes(op) && op !== 's3.GetObjectRetention')).toEqual([]);
  });

  for (const op of Object.keys(PROBES).sort()) {
    it(`${op} leaves a COMPLIANCE-locked version in place`, async () => {
      const l = await lockedVersion();
      await PROBES[op]!(l);
      await expectKept(l);
    });
  }

  it('a bucket lifecycle rule (Kodo rules/add) expiring a locked object adds a delete marker; the version stays', async () => {
    const l = await lockedVersion();
    const a = await rawOp(s, `/rules/add?bucket=${l.bucket}&name=all&prefix=&delete_after_days=1`);
    expect(a.status, a.text).toBe(200);
    s.clock.offsetMs += 3 * 86_400_000;
    try {
      await sweepExpired(s.running.g);
    } finally {
      s.clock.offsetMs -= 3 * 86_400_000;
    }
    await expectKept(l);
  });
});
