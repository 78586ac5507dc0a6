/**
 * Bucket lifecycle rules (docs/development/kodo-protocol.md §8.6 `rules/*`, §13.2) through the official SDK: put/update/delete/get round
 * trips; a rule's dates in stat for objects uploaded after it and already there; the clock passing a rule's day
 * makes objects absent (stat 612, download 404, listings skip them) and the sweeper deletes them and frees their
 * blobs; transitions (stat `type`, archive refused until restoreAr); longest-prefix matching; a rule combined with
 * an object's own lifecycle; bad input; and the `granary bucket rule` CLI. Time moves with the server clock (no
 * sleeps); SDK calls are signed without X-Qiniu-Date so the moved clock does not make them stale.
 */
import { spawnSync } from 'node:child_process';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildCli } from '../../src/cli.js';
import { isKodoError } from '../../src/errors.js';
import { sweepExpired } from '../../src/objects/expiry.js';
import { expiryFromDays } from '../../src/policy/expiry.js';
import { BIN, cleanEnv, REPO_ROOT } from '../helpers/cli.js';
import { countBlobs, entry, expectJsonError, put, rawOp } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { download, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
/** Upload tokens that stay valid after the clock moves forward. */
const LONG = { policy: { expires: 365 * 86400 } };

beforeAll(async () => {
  // The background sweeper stays out of the way: tests run sweeps themselves.
  s = await startTestServer({ GRANARY_EXPIRY_INTERVAL: '86400' });
});
afterAll(async () => s?.stop());

type Stat = Record<string, unknown>;
type Rule = Record<string, unknown>;
const root = (): qiniu.auth.digest.Mac => new qiniu.auth.digest.Mac(AK, SK, { disableQiniuTimestampSignature: true });
const bm = (mac = root()): qiniu.rs.BucketManager => new qiniu.rs.BucketManager(mac, s.zoneConfig());
const nowSec = (): number => Math.floor(s.clock.nowMs() / 1000);

async function stat(bucket: string, key: string): Promise<Stat> {
  const r = await sdk<Stat>(bm().stat(bucket, key));
  expect(r.status, JSON.stringify(r.data)).toBe(200);
  return r.data;
}

/** The exact putTime of an entry in ms (the raw stat text: the JSON number exceeds 2^53). */
async function putMs(bucket: string, key: string): Promise<number> {
  const raw = await rawOp(s, `/stat/${entry(bucket, key)}`, { method: 'GET' });
  return Number(BigInt(/"putTime":(\d+)/.exec(raw.text)?.[1] as string) / 10_000n);
}

async function rules(bucket: string): Promise<Rule[]> {
  const r = await sdk<Rule[]>(bm().getBucketLifecycleRule(bucket));
  expect(r.status, JSON.stringify(r.data)).toBe(200);
  return r.data;
}

async function addRule(bucket: string, rule: Parameters<qiniu.rs.BucketManager['putBucketLifecycleRule']>[1]): Promise<void> {
  const r = await sdk(bm().putBucketLifecycleRule(bucket, rule));
  expect(r.status, JSON.stringify(r.data)).toBe(200);
}

/** Keys of every item of a listing (one page is enough here). */
async function listed(bucket: string, opts: { prefix?: string; delimiter?: string } = {}) {
  const r = await sdk<{ items: Array<{ key: string; type: number }>; commonPrefixes?: string[] }>(bm().listPrefix(bucket, opts));
  expect(r.status).toBe(200);
  return r.data;
}

/** Creates a bucket (signed without X-Qiniu-Date: the clock may have moved). */
async function createBucket(_s: TestServer, bucket: string): Promise<void> {
  expect((await sdk(bm().createBucket(bucket, { regionId: 'z0' }))).status).toBe(200);
}

/** Moves the server clock to `at` + 60 s (Unix seconds). */
function moveTo(at: number): void {
  s.clock.advance(at - nowSec() + 60);
}

describe('rules/add, rules/get, rules/update, rules/delete through the SDK', () => {
  const B = 'rules-crud';
  beforeAll(() => createBucket(s, B));

  it('round-trips a rule in Kodo shape; update replaces prefix and days, keeps ctime; delete removes it', async () => {
    expect(await rules(B)).toEqual([]);
    await addRule(B, {
      name: 'logs_rule',
      prefix: 'logs/',
      to_line_after_days: 30,
      to_archive_ir_after_days: 35,
      to_archive_after_days: 40,
      to_deep_archive_after_days: 50,
      delete_after_days: 65,
    });
    await addRule(B, { name: 'all', delete_after_days: 400 });
    const [first, second] = await rules(B);
    expect(first).toEqual({
      name: 'logs_rule',
      prefix: 'logs/',
      to_line_after_days: 30,
      to_archive_ir_after_days: 35,
      to_archive_after_days: 40,
      to_deep_archive_after_days: 50,
      delete_after_days: 65,
      history_delete_after_days: 0,
      history_to_line_after_days: 0,
      ctime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/),
    });
    expect(second).toMatchObject({ name: 'all', prefix: '', delete_after_days: 400, to_line_after_days: 0 });

    const up = await sdk(
      bm().updateBucketLifecycleRule(B, { name: 'logs_rule', prefix: 'update_logs/', to_line_after_days: 30, to_archive_after_days: 50, delete_after_days: 70 }),
    );
    expect(up.status, JSON.stringify(up.data)).toBe(200);
    const updated = (await rules(B)).find((r) => r.name === 'logs_rule');
    expect(updated).toMatchObject({
      prefix: 'update_logs/',
      to_line_after_days: 30,
      to_archive_ir_after_days: 0, // left out of the form: 0, as in rules/add
      to_archive_after_days: 50,
      to_deep_archive_after_days: 0,
      delete_after_days: 70,
      ctime: first?.ctime,
    });

    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'logs_rule'))).status).toBe(200);
    expect((await rules(B)).map((r) => r.name)).toEqual(['all']);
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'all'))).status).toBe(200);
    expect(await rules(B)).toEqual([]);
  });

  it('answers rules/get to POST as well (the read routes take both)', async () => {
    await addRule(B, { name: 'posted', prefix: 'p/', delete_after_days: 1 });
    const a = await rawOp(s, `/rules/get?bucket=${B}`, { method: 'POST' });
    expect(a.status, a.text).toBe(200);
    expect((a.json as Rule[]).map((r) => r.name)).toEqual(['posted']);
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'posted'))).status).toBe(200);
  });
});

describe('a rule in stat: objects uploaded after it and objects already there', () => {
  const B = 'rules-stat';
  beforeAll(() => createBucket(s, B));

  it('stat shows expiration and transitionToIA counted from each upload; other prefixes are untouched', async () => {
    await put(s, B, 'old/before', 'before the rule', LONG);
    await addRule(B, { name: 'old', prefix: 'old/', delete_after_days: 3, to_line_after_days: 1 });
    await put(s, B, 'old/after', 'after the rule', LONG);
    await put(s, B, 'other/x', 'not governed', LONG);
    for (const key of ['old/before', 'old/after']) {
      const ms = await putMs(B, key);
      expect(await stat(B, key)).toMatchObject({ type: 0, expiration: expiryFromDays(ms, 3), transitionToIA: expiryFromDays(ms, 1) });
    }
    const other = await stat(B, 'other/x');
    expect(other).not.toHaveProperty('expiration');
    expect(other).not.toHaveProperty('transitionToIA');

    // Deleting the rule takes its dates away again (nothing was written into the entries).
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'old'))).status).toBe(200);
    expect(await stat(B, 'old/before')).not.toHaveProperty('expiration');
  });
});

describe('a rule deleting objects (the clock passes the day)', () => {
  const B = 'rules-expire';
  beforeAll(() => createBucket(s, B));

  it('makes them absent to stat, download and listings at once; the sweeper deletes them and frees their blobs', async () => {
    await put(s, B, 'tmp/a', 'temporary a', LONG);
    await put(s, B, 'tmp/b', 'temporary b', LONG);
    await put(s, B, 'keep/c', 'kept', LONG);
    await addRule(B, { name: 'tmp', prefix: 'tmp/', delete_after_days: 1 });
    const expiration = (await stat(B, 'tmp/a')).expiration as number;
    const blobs = await countBlobs(s);

    moveTo(expiration);
    expect((await sdk(bm().stat(B, 'tmp/a'))).status).toBe(612);
    await expectAbsent(s, B, 'tmp/a');
    expect((await listed(B)).items.map((i) => i.key)).toEqual(['keep/c']);
    const rolled = await listed(B, { delimiter: '/' });
    expect(rolled.commonPrefixes).toEqual(['keep/']);
    // Every operation counts them absent: copying from one is 612 (and deletes it for real on the way).
    expect((await sdk(bm().copy(B, 'tmp/b', B, 'copied', {}))).status).toBe(612);

    expect(await sweepExpired(s.running.g)).toBe(1);
    expect(await countBlobs(s)).toBe(blobs - 2);
    expect(await s.running.g.meta.countObjects(B)).toBe(1);
    // A second sweep the same day does not walk the rule's keys again (the cutoff moves at CST midnight only).
    const walks = vi.spyOn(s.running.g.meta, 'deleteUnderPrefix');
    expect(await sweepExpired(s.running.g)).toBe(0);
    expect(walks).not.toHaveBeenCalled();
    walks.mockRestore();
    // Gone for good: removing the rule brings nothing back.
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'tmp'))).status).toBe(200);
    expect((await sdk(bm().stat(B, 'tmp/a'))).status).toBe(612);
    await expectStored(s, B, 'keep/c', Buffer.from('kept'));

    // A key uploaded again under a deleted name is a new object with a new putTime.
    await addRule(B, { name: 'tmp', prefix: 'tmp/', delete_after_days: 1 });
    await put(s, B, 'tmp/a', 'again', LONG);
    await expectStored(s, B, 'tmp/a', Buffer.from('again'));
    expect(await sweepExpired(s.running.g)).toBe(0);
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'tmp'))).status).toBe(200);
  });
});

describe('rule transitions', () => {
  const B = 'rules-class';
  beforeAll(() => createBucket(s, B));

  it('stat type follows the transitions that are due; archive is refused until restoreAr', async () => {
    await put(s, B, 'cold/a', 'cold data', LONG);
    await addRule(B, { name: 'cold', prefix: 'cold/', to_line_after_days: 1, to_archive_after_days: 3 });
    const st = await stat(B, 'cold/a');
    expect(st).toMatchObject({ type: 0, transitionToIA: expect.any(Number), transitionToARCHIVE: expect.any(Number) });
    expect(st).not.toHaveProperty('expiration');

    moveTo(st.transitionToIA as number);
    expect((await stat(B, 'cold/a')).type).toBe(1);
    expect((await listed(B, { prefix: 'cold/' })).items).toMatchObject([{ key: 'cold/a', type: 1 }]);
    await expectStored(s, B, 'cold/a', Buffer.from('cold data')); // IA reads directly

    moveTo(st.transitionToARCHIVE as number);
    expect((await stat(B, 'cold/a')).type).toBe(2);
    const refused = await download(s, B, 'cold/a');
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body.toString()).error).toMatch(/restoreAr/);
    expect((await sdk(bm().restoreAr(`${B}:cold/a`, 1))).status).toBe(200);
    expect(await stat(B, 'cold/a')).toMatchObject({ type: 2, restoreStatus: 2 });
    await expectStored(s, B, 'cold/a', Buffer.from('cold data'));
  });

  it('a due rule transition applies again after chtype to a lower class; Deep Archive via a rule is refused too', async () => {
    await put(s, B, 'ia/c', 'ia data', LONG);
    await put(s, B, 'deep/d', 'deep data', LONG);
    await addRule(B, { name: 'ia', prefix: 'ia/', to_line_after_days: 1 });
    await addRule(B, { name: 'deep', prefix: 'deep/', to_deep_archive_after_days: -1 }); // at upload
    expect((await stat(B, 'deep/d')).type).toBe(3);
    expect((await download(s, B, 'deep/d')).status).toBe(403);

    moveTo((await stat(B, 'ia/c')).transitionToIA as number);
    expect((await stat(B, 'ia/c')).type).toBe(1);
    expect((await sdk(bm().changeType(B, 'ia/c', 0))).status).toBe(200);
    expect((await stat(B, 'ia/c')).type).toBe(1);
    // chtype to a higher class is kept.
    expect((await sdk(bm().changeType(B, 'ia/c', 4))).status).toBe(200);
    expect((await stat(B, 'ia/c')).type).toBe(4);
  });
});

describe('rules with different prefixes: the longest prefix governs a key', () => {
  const B = 'rules-prefixes';
  beforeAll(() => createBucket(s, B));

  it('a global rule, a prefix rule and an exempting rule without actions', async () => {
    await addRule(B, { name: 'global', prefix: '', delete_after_days: 10 });
    await addRule(B, { name: 'logs', prefix: 'logs/', delete_after_days: 2 });
    await addRule(B, { name: 'keep', prefix: 'logs/keep/' });
    await put(s, B, 'a', 'global', LONG);
    await put(s, B, 'logs/x', 'log', LONG);
    await put(s, B, 'logs/keep/y', 'kept log', LONG);
    expect((await stat(B, 'a')).expiration).toBe(expiryFromDays(await putMs(B, 'a'), 10));
    const logs = (await stat(B, 'logs/x')).expiration as number;
    expect(logs).toBe(expiryFromDays(await putMs(B, 'logs/x'), 2));
    expect(await stat(B, 'logs/keep/y')).not.toHaveProperty('expiration');

    const count = (): Promise<number> => s.running.g.meta.countObjects(B);
    moveTo(logs);
    expect((await sdk(bm().stat(B, 'logs/x'))).status).toBe(612);
    expect((await listed(B)).items.map((i) => i.key)).toEqual(['a', 'logs/keep/y']);
    expect(await count()).toBe(3);
    await sweepExpired(s.running.g);
    expect(await count()).toBe(2);

    moveTo((await stat(B, 'a')).expiration as number);
    expect((await listed(B)).items.map((i) => i.key)).toEqual(['logs/keep/y']);
    await sweepExpired(s.running.g);
    expect(await count()).toBe(1);
    await expectStored(s, B, 'logs/keep/y', Buffer.from('kept log'));
  });
});

describe("a rule combined with an object's own lifecycle", () => {
  const B = 'rules-combined';
  beforeAll(() => createBucket(s, B));

  it('each date is the earliest of the own one and the rule one', async () => {
    await addRule(B, { name: 'p', prefix: 'p/', to_line_after_days: 5, delete_after_days: 10 });
    await put(s, B, 'p/own-earlier', 'x', LONG);
    await put(s, B, 'p/own-later', 'y', LONG);
    await put(s, B, 'p/policy', 'z', { policy: { ...LONG.policy, deleteAfterDays: 3 } });
    const ms = await putMs(B, 'p/own-earlier');

    expect((await sdk(bm().deleteAfterDays(B, 'p/own-earlier', 2))).status).toBe(200);
    expect(await stat(B, 'p/own-earlier')).toMatchObject({ expiration: expiryFromDays(ms, 2), transitionToIA: expiryFromDays(ms, 5) });

    const later = await putMs(B, 'p/own-later');
    expect((await sdk(bm().setObjectLifeCycle(B, 'p/own-later', { toIaAfterDays: 1, deleteAfterDays: 20 }))).status).toBe(200);
    expect(await stat(B, 'p/own-later')).toMatchObject({ expiration: expiryFromDays(later, 10), transitionToIA: expiryFromDays(later, 1) });

    expect((await stat(B, 'p/policy')).expiration).toBe(expiryFromDays(await putMs(B, 'p/policy'), 3));

    // Cancelling the own deletion leaves the rule's.
    expect((await sdk(bm().deleteAfterDays(B, 'p/own-earlier', 0))).status).toBe(200);
    expect((await stat(B, 'p/own-earlier')).expiration).toBe(expiryFromDays(ms, 10));
  });
});

describe('bad input', () => {
  const B = 'rules-bad';
  beforeAll(() => createBucket(s, B));
  const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

  it('631 for an unknown bucket, 403 for another account’s bucket (its owner may)', async () => {
    expect((await sdk(bm().putBucketLifecycleRule('no-such-bucket', { name: 'r' }))).status).toBe(631);
    expect((await sdk(bm().getBucketLifecycleRule('no-such-bucket'))).status).toBe(631);
    expect((await sdk(bm().deleteBucketLifecycleRule('no-such-bucket', 'r'))).status).toBe(631);

    const pair = await s.running.g.keyIndex.create(0);
    const alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey, { disableQiniuTimestampSignature: true });
    expect((await sdk(bm(alice).putBucketLifecycleRule(B, { name: 'r', delete_after_days: 1 }))).status).toBe(403);
    expect((await sdk(bm(alice).getBucketLifecycleRule(B))).status).toBe(403);
    expect((await sdk(bm(alice).updateBucketLifecycleRule(B, { name: 'r' }))).status).toBe(403);
    expect((await sdk(bm(alice).deleteBucketLifecycleRule(B, 'r'))).status).toBe(403);
    expect((await sdk(bm(alice).createBucket('rules-alice', { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(bm(alice).putBucketLifecycleRule('rules-alice', { name: 'r', delete_after_days: 1 }))).status).toBe(200);
    expect((await sdk<Rule[]>(bm(alice).getBucketLifecycleRule('rules-alice'))).data).toHaveLength(1);
    expect(await rules(B)).toEqual([]);

    const unsigned = await fetch(`${s.url}/rules/get?bucket=${B}`);
    expect(unsigned.status).toBe(401);
  });

  it('400 naming the field for malformed or disordered days, a bad or missing name', async () => {
    const bad = async (fields: Record<string, string>, re: RegExp): Promise<void> => {
      const a = await rawOp(s, '/rules/add', { body: form({ bucket: B, ...fields }) });
      expectJsonError(a, 400);
      expect((a.json as { error: string }).error).toMatch(re);
    };
    await bad({ name: 'r', delete_after_days: 'ten' }, /delete_after_days must be an integer/);
    await bad({ name: 'r', to_line_after_days: '1.5' }, /to_line_after_days/);
    await bad({ name: 'r', delete_after_days: '-1' }, /delete_after_days/);
    await bad({ name: 'r', to_line_after_days: '30', to_archive_after_days: '10' }, /to_archive_after_days \(10\) must be greater than to_line_after_days \(30\)/);
    await bad({ name: 'r', to_archive_after_days: '10', delete_after_days: '10' }, /delete_after_days .* to_archive_after_days/);
    await bad({ name: 'bad-name' }, /name/);
    await bad({ prefix: 'x' }, /name is required/);
    expect(await rules(B)).toEqual([]);
  });

  it('400 `rule name exists` for a taken name (as Kodo), 400 for a taken prefix, 400 for an unknown name on update (as Kodo) and 612 on delete', async () => {
    await addRule(B, { name: 'first', prefix: 'a/', delete_after_days: 1 });
    const dupName = await sdk<{ error: string }>(bm().putBucketLifecycleRule(B, { name: 'first', prefix: 'b/', delete_after_days: 1 }));
    expect(dupName.status).toBe(400);
    expect(dupName.data.error).toMatch(/rule name exists: first/);
    const dupPrefix = await sdk<{ error: string }>(bm().putBucketLifecycleRule(B, { name: 'second', prefix: 'a/', delete_after_days: 2 }));
    expect(dupPrefix.status).toBe(400);
    expect(dupPrefix.data.error).toMatch(/prefix.*"a\/" \(rule first\)/);
    await addRule(B, { name: 'second', prefix: 'b/', delete_after_days: 2 });
    // Updating a rule onto another rule's prefix is refused; onto its own prefix is fine.
    expect((await sdk(bm().updateBucketLifecycleRule(B, { name: 'second', prefix: 'a/', delete_after_days: 3 }))).status).toBe(400);
    expect((await sdk(bm().updateBucketLifecycleRule(B, { name: 'second', prefix: 'b/', delete_after_days: 3 }))).status).toBe(200);

    const unknownUpdate = await sdk<{ error: string }>(bm().updateBucketLifecycleRule(B, { name: 'nope', delete_after_days: 1 }));
    expect(unknownUpdate.status).toBe(400);
    expect(unknownUpdate.data.error).toMatch(/no such lifecycle rule: nope/);
    expect((await sdk(bm().deleteBucketLifecycleRule(B, 'nope'))).status).toBe(612);
    expect((await rules(B)).map((r) => [r.name, r.prefix, r.delete_after_days])).toEqual([
      ['first', 'a/', 1],
      ['second', 'b/', 3],
    ]);
  });

  it('refuses a rule past the limit of 100 per bucket', async () => {
    const L = 'rules-limit';
    await createBucket(s, L);
    for (let i = 0; i < 100; i++) {
      const a = await rawOp(s, '/rules/add', { body: form({ bucket: L, name: `r${i}`, prefix: `p${i}/`, delete_after_days: '1' }) });
      expect(a.status, a.text).toBe(200);
    }
    const over = await rawOp(s, '/rules/add', { body: form({ bucket: L, name: 'r100', prefix: 'p100/', delete_after_days: '1' }) });
    expectJsonError(over, 400);
    expect((over.json as { error: string }).error).toMatch(/at most 100/);
  });
});

describe('granary bucket rule (CLI on the data dir of the running server)', () => {
  const B = 'rules-cli';
  beforeAll(() => createBucket(s, B));
  const flags = ['--data-dir', '', '--access-key', AK, '--secret-key', SK];
  const withFlags = (args: string[]): string[] => [...args, ...flags.map((f) => f || s.dataDir)];

  /** Runs `granary bucket rule …` in this process (the command tree of src/cli.ts); its stdout, or the error thrown. */
  async function cli(...args: string[]): Promise<{ stdout: string; error?: Error }> {
    let stdout = '';
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stdout += String(chunk);
      return true;
    });
    try {
      await buildCli().parseAsync(['node', 'granary', 'bucket', 'rule', ...withFlags(args)]);
      return { stdout };
    } catch (error) {
      return { stdout, error: error as Error };
    } finally {
      write.mockRestore();
    }
  }

  it('adds, lists, updates and deletes rules the server applies at once; errors carry the catalogue message', async () => {
    const add = await cli('add', B, 'logs_cli', '--prefix', 'logs/', '--to-ia-after-days', '7', '--delete-after-days', '30');
    expect(add).toEqual({ stdout: `added lifecycle rule logs_cli to bucket ${B}\n` });
    expect((await rules(B)).map((r) => [r.name, r.prefix, r.to_line_after_days, r.delete_after_days])).toEqual([['logs_cli', 'logs/', 7, 30]]);
    await put(s, B, 'logs/1', 'one', LONG);
    expect((await stat(B, 'logs/1')).expiration).toBe(expiryFromDays(await putMs(B, 'logs/1'), 30));
    expect((await cli('list', B)).stdout).toBe('logs_cli\tlogs/\tdelete-after-days=30 to-ia-after-days=7\n');

    expect((await cli('update', B, 'logs_cli', '--prefix', 'logs/', '--to-archive-after-days', '5')).error).toBeUndefined();
    expect((await cli('list', B)).stdout).toBe('logs_cli\tlogs/\tto-archive-after-days=5\n');

    const disordered = await cli('add', B, 'bad', '--to-ia-after-days', '5', '--to-archive-after-days', '1');
    expect(isKodoError(disordered.error, 'badLifecycleRule')).toBe(true);
    expect(disordered.error?.message).toMatch(/to_archive_after_days \(1\) must be greater than to_line_after_days \(5\)/);
    expect((await cli('add', B, 'bad', '--delete-after-days', 'x')).error?.message).toMatch(/--delete-after-days must be an integer/);
    expect(isKodoError((await cli('list', 'no-such-bucket')).error, 'noSuchBucket')).toBe(true);

    expect((await cli('delete', B, 'logs_cli')).stdout).toBe(`deleted lifecycle rule logs_cli of bucket ${B}\n`);
    expect((await cli('list', B)).stdout).toBe('');
    expect(await rules(B)).toEqual([]);
  });

  it('as a command: an error exits 1 with the message and its status on stderr', () => {
    const r = spawnSync(process.execPath, [BIN, 'bucket', 'rule', ...withFlags(['delete', B, 'nope'])], {
      cwd: REPO_ROOT,
      env: cleanEnv(),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('granary: no such lifecycle rule: nope (612)\n');
  }, 60_000);
});
