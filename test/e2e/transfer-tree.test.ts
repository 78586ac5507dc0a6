/**
 * The transfer CLI on a real tree — photos, a video, 1,000 small files and a 50 MiB file — between two
 * Granary servers on loopback, one playing Qiniu's cloud (its own keys, a private bucket):
 * - `put` of the tree, every etag checked against the local files; `sync` finding nothing to copy, then only the
 *   changed file; a multipart put SIGKILLed and resumed from its
 *   record (only the missing parts sent); `get` of it back, bytes compared; a download
 *   resumed from its partial temp file, and a corrupt partial never renamed into place;
 * - `migrate` by server-side async fetch (the destination allows loopback with GRANARY_OUTBOUND_ALLOW), the CLI
 *   SIGKILLed mid-run and resumed from its checkpoint: every etag matching, nothing stored twice (putTimes of what
 *   was there at the kill unchanged; each fetch task submitted once), MIME type, x-qn-meta-* and storage class kept;
 * - `migrate` back to the "cloud", whose outbound guard refuses loopback: the CLI says so and streams.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partName } from '../../src/transfer/download.js';
import { fileEtag } from '../../src/transfer/local-etag.js';
import { RemoteStore } from '../../src/transfer/remotes.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { summaryOf, TransferCli, writeSmallFiles } from '../helpers/transfer.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';

const VIDEO = '/work/shared/fixtures/video/big_buck_bunny.mp4';
const MiB = 1024 * 1024;
const CLOUD = { GRANARY_ACCESS_KEY: 'cloud-ak', GRANARY_SECRET_KEY: 'cloud-sk' };
const HOME = { GRANARY_ACCESS_KEY: 'home-ak', GRANARY_SECRET_KEY: 'home-sk' };

interface Stat {
  key: string;
  hash: string;
  fsize: number;
  mimeType: string;
  putTime: number;
  type: number;
  'x-qn-meta'?: Record<string, string>;
}

/** A BucketManager signing with a server's root keys (made per use: zoneConfig() also points the SDK's global uc host). */
function managerOf(server: TestServer, keys: typeof CLOUD): qiniu.rs.BucketManager {
  return new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(keys.GRANARY_ACCESS_KEY, keys.GRANARY_SECRET_KEY), server.zoneConfig());
}

async function listAll(bm: qiniu.rs.BucketManager, bucket: string): Promise<Map<string, Stat>> {
  const out = new Map<string, Stat>();
  let marker = '';
  do {
    const { data } = await sdk<{ items: Stat[]; marker?: string }>(bm.listPrefix(bucket, { limit: 1000, marker }));
    for (const it of data.items) out.set(it.key, it);
    marker = data.marker ?? '';
  } while (marker);
  return out;
}

async function filesUnder(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await filesUnder(dir, r)));
    else out.push(r);
  }
  return out.sort();
}

/** The highest `bytes` of the complete `progress` lines of a JSON run so far. */
function progressBytes(out: string): number {
  const lines = out.split('\n').slice(0, -1);
  return Math.max(0, ...lines.filter((l) => l.includes('"event":"progress"')).map((l) => (JSON.parse(l) as { bytes: number }).bytes));
}

const sha = async (p: string): Promise<string> => createHash('sha256').update(await readFile(p)).digest('hex');

// Generous limits: the machine is shared; nothing here asserts a duration.
describe('transfer: a tree between two servers', { timeout: 240_000 }, () => {
  let cloud: TestServer;
  let home: TestServer;
  const cm = (): qiniu.rs.BucketManager => managerOf(cloud, CLOUD);
  const hm = (): qiniu.rs.BucketManager => managerOf(home, HOME);
  let work: string;
  let tree: string;
  let files: string[];
  let cli: TransferCli;
  const submitted: string[] = [];
  const pending = new Set<string>();
  const drainWaiters: Array<() => void> = [];
  /** Resolves once every task the destination accepted has ended. */
  const drained = (): Promise<void> => (pending.size === 0 ? Promise.resolve() : new Promise((resolve) => drainWaiters.push(resolve)));

  beforeAll(async () => {
    [cloud, home] = await Promise.all([
      startTestServer(CLOUD),
      // The destination reaches the source on loopback only because the operator allows it.
      startTestServer({ ...HOME, GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_FETCH_CONCURRENCY: '8' }),
    ]);
    // Counts the async-fetch tasks the destination accepts, by key (instrumentation: the store still stores them).
    // and the ones that ended, so a test can await the queue being drained.
    const tasks = home.running.g.meta.fetchTasks;
    const enqueue = tasks.enqueue.bind(tasks);
    tasks.enqueue = (task) => {
      submitted.push((JSON.parse(task.request) as { key: string }).key);
      pending.add(task.id);
      return enqueue(task);
    };
    const finish = tasks.finish.bind(tasks);
    tasks.finish = async (id, state, result, nowMs) => {
      const r = await finish(id, state, result, nowMs);
      pending.delete(id);
      if (pending.size === 0) for (const w of drainWaiters.splice(0)) w();
      return r;
    };
    work = await mkdtemp(join(tmpdir(), 'granary-transfer-'));
    cli = await TransferCli.create(join(work, 'config'));
    const store = new RemoteStore(cli.configDir);
    await store.put({ name: 'qiniu', accessKey: 'cloud-ak', secretKey: 'cloud-sk', ucHost: cloud.host });
    await store.put({ name: 'home', accessKey: 'home-ak', secretKey: 'home-sk', ucHost: home.host });

    tree = join(work, 'tree');
    await mkdir(join(tree, 'photos'), { recursive: true });
    for (const name of (await readdir(FIXTURE_IMAGES)).filter((n) => /\.(jpe?g|heic|heif|tiff)$/i.test(n))) {
      await copyFile(join(FIXTURE_IMAGES, name), join(tree, 'photos', name));
    }
    await copyFile(VIDEO, join(tree, 'bunny.mp4'));
    await writeSmallFiles(join(tree, 'small'), 1000, 1500);
    await writeFile(join(tree, 'big.bin'), randomBytes(50 * MiB));
    files = await filesUnder(tree);

    await sdk(cm().createBucket('vault', {} as never));
    expect((await sdk(cm().putBucketAccessMode('vault', { private: 1 }))).status).toBe(200);
    await sdk(hm().createBucket('archive', {} as never));
  }, 120_000);

  afterAll(async () => {
    await Promise.all([cloud?.stop(), home?.stop()]);
    await rm(work, { recursive: true, force: true });
  });

  it('puts the tree into a private bucket; every etag matches the local file', async () => {
    const r = await cli.json(['put', tree, 'qiniu:vault', '--concurrency', '16']);
    expect(r.status, r.stderr).toBe(0);
    expect(files.length).toBeGreaterThan(1020);
    expect(summaryOf(r.events)).toMatchObject({ copied: files.length, failed: 0 });
    const events = r.events.filter((e) => e.event === 'file');
    expect(events.find((e) => e.key === 'big.bin')).toMatchObject({ action: 'copied', via: 'multipart', bytes: 50 * MiB });
    expect(events.find((e) => e.key === 'bunny.mp4')).toMatchObject({ action: 'copied', via: 'form' });
    const listed = await listAll(cm(), 'vault');
    expect([...listed.keys()].sort()).toEqual(files);
    for (const rel of files.filter((f) => !f.startsWith('small/') || f.endsWith('7.bin'))) expect(listed.get(rel)?.hash, rel).toBe(await fileEtag(join(tree, rel)));
    expect(listed.get('photos/Canon_40D.jpg')?.mimeType).toBe('image/jpeg');
    // The bucket is private: only signed URLs (what get and migrate use) read it.
    expect((await fetch(`${cloud.url}/vault/bunny.mp4`)).status).toBe(401);
  });

  it('syncs the tree with the bucket: nothing differs after the put; a changed photo is the only copy', async () => {
    const same = await cli.json(['sync', tree, 'qiniu:vault', '--concurrency', '16']);
    expect(summaryOf(same.events)).toMatchObject({ copied: 0, skipped: files.length, failed: 0 });
    const photo = join(tree, 'photos', 'Nikon_D70.jpg');
    const bytes = await readFile(photo);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 3) ^ 0xff, bytes.length - 3); // same size, other etag
    await writeFile(photo, bytes);
    const one = await cli.json(['sync', tree, 'qiniu:vault', '--concurrency', '16']);
    expect(summaryOf(one.events)).toMatchObject({ copied: 1, skipped: files.length - 1, failed: 0 });
    expect(one.events.find((e) => e.action === 'copied')).toMatchObject({ key: 'photos/Nikon_D70.jpg' });
    expect((await sdk<Stat>(cm().stat('vault', 'photos/Nikon_D70.jpg'))).data.hash).toBe(await fileEtag(photo));
  });

  it('resumes an interrupted multipart put from its record (SIGKILL), sending only the missing parts', async () => {
    const records = join(cli.configDir, 'records');
    const args = ['put', join(tree, 'big.bin'), 'qiniu:vault/again/big.bin', '--json'];
    const first = cli.start([...args, '--bwlimit', '12M']);
    await first.waitFor((out) => progressBytes(out) >= 8 * MiB);
    first.child.kill('SIGKILL');
    await first.done;
    const json = async (): Promise<string[]> => (await readdir(records)).filter((n) => n.endsWith('.json'));
    expect(await json()).toHaveLength(1);
    const second = await cli.json(args);
    expect(second.status, second.stderr).toBe(0);
    const ev = second.events.find((e) => e.event === 'file');
    expect(ev).toMatchObject({ action: 'copied', via: 'multipart', bytes: 50 * MiB });
    expect(ev?.resumedBytes as number).toBeGreaterThanOrEqual(8 * MiB);
    expect(ev?.resumedBytes as number).toBeLessThan(50 * MiB);
    expect(await json()).toEqual([]);
    expect((await sdk<Stat>(cm().stat('vault', 'again/big.bin'))).data.hash).toBe(await fileEtag(join(tree, 'big.bin')));
  });

  it('gets it back: same files, same bytes, no temp files', async () => {
    const out = join(work, 'restored');
    const r = await cli.json(['get', 'qiniu:vault/', out, '--concurrency', '16', '--exclude', 'again/**']);
    expect(r.status, r.stderr).toBe(0);
    expect(summaryOf(r.events)).toMatchObject({ copied: files.length, failed: 0 });
    expect(await filesUnder(out)).toEqual(files);
    for (const rel of files.filter((f) => !f.startsWith('small/') || f.endsWith('3.bin'))) expect(await sha(join(out, rel)), rel).toBe(await sha(join(tree, rel)));
  });

  it('resumes a download from its partial temp file; a corrupt partial is refused and never renamed', async () => {
    const big = join(tree, 'big.bin');
    const entry = (await sdk<Stat>(cm().stat('vault', 'big.bin'))).data;
    const dir = join(work, 'resume');
    await mkdir(dir);
    const target = join(dir, 'big.bin');
    const part = partName(target, { ...entry, key: 'big.bin' });
    await writeFile(part, (await readFile(big)).subarray(0, 20 * MiB));
    const r = await cli.json(['get', 'qiniu:vault/big.bin', target]);
    expect(r.status, r.stderr).toBe(0);
    expect(await sha(target)).toBe(await sha(big));
    await expect(stat(part)).rejects.toThrow();

    const target2 = join(dir, 'big2.bin');
    await writeFile(partName(target2, { ...entry, key: 'big.bin' }), Buffer.alloc(10 * MiB, 7));
    const bad = await cli.json(['get', 'qiniu:vault/big.bin', target2]);
    expect(bad.status).toBe(1);
    expect(summaryOf(bad.events)).toMatchObject({ failed: 1 });
    expect(JSON.stringify(bad.events)).toContain('etag mismatch');
    expect(await readdir(dir)).toEqual(['big.bin']);
  });

  it('migrates the private bucket by server-side fetch, survives a SIGKILL and resumes without copying twice', async () => {
    // Attributes a migration must keep: MIME type, metadata, storage class.
    const extra = new qiniu.form_up.PutExtra('note.txt', {}, 'text/x-note', undefined, true, { 'x-qn-meta-color': 'red', 'x-qn-meta-owner': 'ana' });
    const token = new qiniu.rs.PutPolicy({ scope: 'vault:note.txt' }).uploadToken(new qiniu.auth.digest.Mac('cloud-ak', 'cloud-sk'));
    expect((await new qiniu.form_up.FormUploader(cloud.zoneConfig()).put(token, 'note.txt', Buffer.from('kept with its attributes'), extra)).resp.statusCode).toBe(200);
    expect((await sdk(cm().changeType('vault', 'photos/Canon_40D.jpg', 1))).status).toBe(200);

    const source = await listAll(cm(), 'vault');
    const checkpoint = join(work, 'vault.jsonl');
    const args = ['migrate', 'qiniu:vault', 'home:archive', '--checkpoint', checkpoint, '--concurrency', '16', '--json'];
    const first = cli.start(args);
    await first.waitFor((out) => (out.match(/"action":"copied"/g) ?? []).length >= 100);
    first.child.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    // Tasks submitted just before the kill (their answers never read, so not in the checkpoint) still run.
    await drained();
    const atKill = await listAll(hm(), 'archive');
    expect(atKill.size).toBeGreaterThanOrEqual(100);
    expect(atKill.size).toBeLessThan(source.size);

    const second = await cli.json(args.slice(0, -1));
    expect(second.status, second.stderr).toBe(0);
    const summary = summaryOf(second.events);
    expect(summary).toMatchObject({ failed: 0, verified: source.size, mismatched: 0, viaStream: 0, putTimePreserved: false });
    expect(summary.copied + summary.skipped).toBe(source.size);
    expect(summary.viaFetch as number).toBeGreaterThan(0);

    const dest = await listAll(hm(), 'archive');
    expect(dest.size).toBe(source.size);
    for (const [key, s] of source) expect(dest.get(key)?.hash, key).toBe(s.hash);
    // Nothing stored twice: what was there at the kill was not written again …
    for (const [key, before] of atKill) expect(dest.get(key)?.putTime, key).toBe(before.putTime);
    // … and no key was submitted twice as a fetch task: not those recorded in the checkpoint, not those whose
    // answer the kill cut off (found at the destination on resume).
    expect(new Set(submitted).size).toBe(submitted.length);
    const recorded = (await readFile(checkpoint, 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"s":"task"'))
      .map((l) => (JSON.parse(l) as { k: string }).k);
    expect(new Set(recorded).size).toBe(recorded.length);
    for (const k of submitted) expect(recorded.includes(k) || atKill.has(k), k).toBe(true);

    expect((await sdk<Stat>(hm().stat('archive', 'note.txt'))).data).toMatchObject({ mimeType: 'text/x-note', 'x-qn-meta': { color: 'red', owner: 'ana' } });
    expect((await sdk<Stat>(hm().stat('archive', 'photos/Canon_40D.jpg'))).data.type).toBe(1);
    expect((await sdk<Stat>(hm().stat('archive', 'bunny.mp4'))).data.mimeType).toBe('video/mp4');

    // Once more: everything is in the checkpoint, nothing moves.
    const third = await cli.json(args.slice(0, -1));
    expect(summaryOf(third.events)).toMatchObject({ copied: 0, skipped: source.size, failed: 0 });
  });

  it('streams through the CLI when the destination cannot reach the source (outbound guard), keeping attributes', async () => {
    await sdk(cm().createBucket('back', {} as never));
    const r = await cli.json(['migrate', 'home:archive', 'qiniu:back', '--exclude', 'small/**', '--exclude', 'again/**']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.events.filter((e) => e.event === 'note').map((e) => String(e.message)).join('\n')).toMatch(/cannot fetch from the source/);
    const archive = await listAll(hm(), 'archive');
    const expected = [...archive.keys()].filter((k) => !k.startsWith('small/') && !k.startsWith('again/')).sort();
    expect(summaryOf(r.events)).toMatchObject({ copied: expected.length, failed: 0, viaStream: expected.length, viaFetch: 0, verified: expected.length });
    const back = await listAll(cm(), 'back');
    expect([...back.keys()].sort()).toEqual(expected);
    for (const k of expected) expect(back.get(k)?.hash, k).toBe(archive.get(k)?.hash);
    expect((await sdk<Stat>(cm().stat('back', 'note.txt'))).data).toMatchObject({ mimeType: 'text/x-note', 'x-qn-meta': { color: 'red', owner: 'ana' } });
    expect((await sdk<Stat>(cm().stat('back', 'photos/Canon_40D.jpg'))).data.type).toBe(1);
  });
});
