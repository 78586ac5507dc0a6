/**
 * Storage failures, on real file systems: a full disk (a small tmpfs), the free-space reserve, a
 * read-only staging area (a read-only mount), lost write permission (a server without CAP_DAC_OVERRIDE) and a
 * blob deletion that keeps failing at start. Every write answers a JSON 599 naming the problem (never a path)
 * within a bounded time, staged bytes are removed, the object already under the key is untouched, /health/ready
 * says why, and the server recovers by itself once the cause is gone.
 */
import { chmod, mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seededBytes } from '../helpers/files.js';
import { sendHead } from '../helpers/http.js';
import { RawUp, upToken } from '../helpers/resumable.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { mountReadOnlyOver, mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';
import { createBucket, expectError, expectStored, multipart, readAnswer, uploadParts, type RawAnswer } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'disk';
/** Every answer must come within this: a failing disk is a clear 5xx, never a hang. */
const BOUNDED_MS = 10_000;

/** Form upload of `content` under `key` to `base`, with a time limit. */
async function formUpload(base: string, key: string, content: Buffer, policy: Record<string, unknown> = {}): Promise<RawAnswer> {
  const { body, contentType } = multipart(uploadParts(upToken({ scope: `${BUCKET}:${key}`, ...policy }), key, content));
  return readAnswer(await fetch(`${base}/`, { method: 'POST', headers: { 'content-type': contentType }, body, signal: AbortSignal.timeout(BOUNDED_MS) }));
}

/** A storage failure: JSON 599 whose message matches `what` and names no path. */
function expectStorageError(a: RawAnswer, what: RegExp): void {
  expectError(a, 599, what);
  expect((a.json as { error: string }).error).not.toMatch(/\/(tmp|work|blobs)\b|\.part\b/);
}

async function ready(base: string): Promise<{ status: number; body: { status: string; reasons?: string[] } }> {
  const res = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(BOUNDED_MS) });
  return { status: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
}

async function stagingEmpty(dataDir: string): Promise<void> {
  expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
}

describe('a full disk', () => {
  let fs: Tmpfs;
  let s: TestServer;
  const old = seededBytes('full-old', 1024);

  beforeAll(async () => {
    fs = await mountTmpfs(24 * MiB);
    // Inline storage off: a tiny object could otherwise land in WAL pages SQLite already holds on the full disk
    // (and rightly succeed). The reserve below refuses inline objects up front like every other.
    s = await startTestServer({ GRANARY_DATA_DIR: fs.dir, GRANARY_MIN_FREE_BYTES: '0', GRANARY_INLINE_MAX: '0' });
    await createBucket(s, BUCKET);
    expect((await formUpload(s.url, 'k', old)).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await fs?.unmount();
  });
  afterEach(async () => fs.unfill());

  it('answers every upload kind with a 599 naming the full disk at once, loses nothing, and recovers', async () => {
    await fs.fill();
    expectStorageError(await formUpload(s.url, 'new', Buffer.from('four')), /storage full/);
    expectStorageError(await formUpload(s.url, 'k', seededBytes('full-new', 3000)), /storage full/);
    const up = new RawUp(s.url, upToken({ scope: BUCKET }));
    expectStorageError(await up.mkblk(4, Buffer.from('abcd')), /storage full/);
    // v2 init writes one metadata row and no bytes: SQLite may still have room in WAL pages it already holds
    // (checkpoints reuse them), then it rightly succeeds; when it has none it is the 599.
    const init = await up.init(BUCKET, 'v2');
    if (init.status !== 200) expectError(init, 599, /storage/);
    const ready503 = await ready(s.url);
    expect(ready503.status).toBe(503);
    expect(ready503.body.reasons?.join(' ')).toMatch(/data dir: storage full/);
    expect((await fetch(`${s.url}/health/live`)).status).toBe(200);
    await stagingEmpty(s.dataDir);
    await expectStored(s, BUCKET, 'k', old);

    await fs.unfill();
    expect((await formUpload(s.url, 'new', Buffer.from('four'))).status).toBe(200);
    expect((await up.mkblk(4, Buffer.from('abcd'))).status).toBe(200);
    expect((await ready(s.url)).status).toBe(200);
  });

  it('fails an upload that fills the disk midway with 599, removes its staged bytes, keeps the old object', async () => {
    await fs.fill(MiB);
    expectStorageError(await formUpload(s.url, 'k', seededBytes('full-big', 3 * MiB)), /storage full/);
    await stagingEmpty(s.dataDir);
    await fs.unfill();
    await expectStored(s, BUCKET, 'k', old);
  });
});

describe('the free-space reserve (GRANARY_MIN_FREE_BYTES)', () => {
  let fs: Tmpfs;
  let s: TestServer;

  beforeAll(async () => {
    fs = await mountTmpfs(32 * MiB);
    await fs.fill(4 * MiB); // below the reserve before the server starts
    s = await startTestServer({ GRANARY_DATA_DIR: fs.dir, GRANARY_MIN_FREE_BYTES: String(8 * MiB) });
    await createBucket(s, BUCKET);
  });
  afterAll(async () => {
    await s?.stop();
    await fs?.unmount();
  });

  it('refuses uploads up front while free space is under the reserve, says why on /health/ready, and resumes', async () => {
    const refused = await formUpload(s.url, 'r', Buffer.from('small'));
    expectStorageError(refused, /storage full: .* free, (\d+ B incoming, )?the reserve is 8\.0 MiB \(GRANARY_MIN_FREE_BYTES\)/);
    await stagingEmpty(s.dataDir);
    const r = await ready(s.url);
    expect(r.status).toBe(503);
    expect(r.body.reasons?.join(' ')).toMatch(/below the reserve 8\.0 MiB \(GRANARY_MIN_FREE_BYTES\)/);

    await fs.unfill();
    expect((await formUpload(s.url, 'r', Buffer.from('small'))).status).toBe(200);
    expect((await ready(s.url)).status).toBe(200);
  });

  it('refuses a part whose Content-Length would take free space under the reserve, before reading it', async () => {
    const up = new RawUp(s.url, upToken({ scope: BUCKET }));
    const { uploadId } = (await up.init(BUCKET, 'big')).json as { uploadId: string };
    const declared = (await fs.free()) - 4 * MiB; // leaves 4 MiB: under the 8 MiB reserve
    const a = await sendHead(s.running.port, 'PUT', `/buckets/${BUCKET}/objects/${Buffer.from('big').toString('base64url')}/uploads/${uploadId}/1`, {
      authorization: `UpToken ${upToken({ scope: BUCKET })}`,
      'content-length': String(declared),
    });
    expect(a.status, a.text).toBe(599);
    expect(a.text).toMatch(/incoming, the reserve is 8\.0 MiB/);
  });
});

describe('a read-only staging area (EROFS)', () => {
  let s: TestServer;
  let release: (() => void) | undefined;
  const old = seededBytes('ro-old', 2048);

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, BUCKET);
    expect((await formUpload(s.url, 'k', old)).status).toBe(200);
  });
  afterAll(async () => {
    release?.();
    await s?.stop();
  });

  it('answers uploads with 599 read-only while downloads go on, and recovers when it is writable again', async () => {
    release = mountReadOnlyOver(join(s.dataDir, 'tmp'));
    // Larger than GRANARY_INLINE_MAX: its bytes go through the staging area.
    expectStorageError(await formUpload(s.url, 'k', seededBytes('ro-new', 200 * 1024)), /storage is read-only/);
    // A small object is stored inline in the metadata database: it never touches the staging area.
    expect((await formUpload(s.url, 'small', seededBytes('ro-small', 2048))).status).toBe(200);
    await expectStored(s, BUCKET, 'small', seededBytes('ro-small', 2048));
    expectStorageError(await new RawUp(s.url, upToken({ scope: BUCKET })).mkblk(3, Buffer.from('abc')), /read-only/);
    await expectStored(s, BUCKET, 'k', old);
    const r = await ready(s.url);
    expect(r.status).toBe(503);
    expect(r.body.reasons?.join(' ')).toMatch(/data dir: storage is read-only/);
    release();
    release = undefined;
    expect((await formUpload(s.url, 'k2', Buffer.from('back'))).status).toBe(200);
    expect((await ready(s.url)).status).toBe(200);
  });
});

describe('lost write permission (EACCES)', () => {
  let dataDir = '';
  let child: ChildServer | undefined;
  afterAll(async () => {
    child?.child.kill('SIGKILL');
    if (dataDir) {
      await chmod(join(dataDir, 'tmp'), 0o755).catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('is a 599 naming the permission problem (not the client, not the path), and heals when permission returns', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-eacces-'));
    // Root without CAP_DAC_OVERRIDE: file modes apply to the server as to any other user.
    const noOverride = ['setpriv', '--bounding-set', '-dac_override,-dac_read_search', '--inh-caps', '-dac_override,-dac_read_search', '--'];
    child = await spawnServer({ GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK }, await freePort(), noOverride);
    const bm = await fetch(`${child.url}/mkbucketv3/${BUCKET}/region/z0`, { method: 'POST', headers: await rootAuth(`/mkbucketv3/${BUCKET}/region/z0`) });
    expect(bm.status).toBe(200);
    await chmod(join(dataDir, 'tmp'), 0o555);
    const a = await formUpload(child.url, 'k', seededBytes('denied', 200 * 1024)); // not inline: through staging
    expectStorageError(a, /storage permission denied/);
    expect(a.text).not.toMatch(/invalid multipart|EACCES: permission denied, open/);
    await chmod(join(dataDir, 'tmp'), 0o755);
    expect((await formUpload(child.url, 'k', Buffer.from('allowed'))).status).toBe(200);
  });
});

/** A QBox management Authorization for `path` (root key). */
async function rootAuth(path: string): Promise<Record<string, string>> {
  const qiniu = (await import('qiniu')).default;
  return { authorization: qiniu.util.generateAccessToken(new qiniu.auth.digest.Mac(AK, SK), `http://x${path}`) };
}

describe('a blob deletion that keeps failing at start', () => {
  let dataDir = '';
  let child: ChildServer | undefined;
  afterAll(async () => {
    child?.child.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('does not hold up start-up: the others are deleted, the failures logged once and kept for a retry', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-drain-'));
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
    const first = await spawnServer(env, await freePort());
    first.child.kill('SIGTERM');
    await first.exited;
    // 1,200 pending deletions (more than two pages): 1,197 of absent files, 3 whose path is a directory, which
    // unlink refuses (EISDIR: a deletion failing with something other than ENOENT, as EIO would).
    const ids = Array.from({ length: 1200 }, (_, i) => i.toString(16).padStart(32, '0'));
    const failing = [ids[10], ids[600], ids[1199]] as string[];
    for (const id of failing) {
      const dir = join(dataDir, 'blobs', id.slice(0, 2), id.slice(2, 4), id);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'keep'), 'x');
    }
    const db = new Database(join(dataDir, 'meta.db'));
    const insert = db.prepare('INSERT INTO blob_deletions (id) VALUES (?)');
    db.transaction(() => ids.forEach((id) => insert.run(id)))();
    db.close();

    child = await spawnServer(env, await freePort());
    const log = child.stdout();
    const lines = log.split('\n').filter((l) => l.includes('freed blobs that could not be deleted'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ failed: 3, deleted: 1197 });
    expect((await formUpload(child.url, 'after', Buffer.from('serving'))).status).toBe(631); // no bucket: but it answers
    const after = new Database(join(dataDir, 'meta.db'), { readonly: true });
    const left = (after.prepare('SELECT id FROM blob_deletions ORDER BY id').all() as { id: string }[]).map((r) => r.id);
    after.close();
    expect(left).toEqual(failing);
  });
});
