/**
 * The transfer CLI against one Granary on loopback: remote profiles (mode 0600 in a 0700 directory),
 * bad input answered with one line and exit status 1 (unknown remote, wrong SecretKey, unknown AccessKey, missing
 * bucket, unreadable local path), single-file naming, and `sync` in every direction: dry run, copying only what
 * differs by size and etag, `--delete`, include/exclude globs, `--bwlimit`.
 */
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileEtag } from '../../src/transfer/local-etag.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { summaryOf, TransferCli, writeSmallFiles, type RunResult } from '../helpers/transfer.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';

const PHOTOS = ['Canon_40D.jpg', 'Nikon_D70.jpg', 'gps_DSCN0010.jpg', 'orientation_landscape_6.jpg'];

/** A failure the way a user should see it: exit 1, one line on stderr, no stack. */
function expectOneLineError(r: RunResult, pattern: RegExp): void {
  expect(r.status, r.stdout).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^granary: /);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

async function keysOf(server: TestServer, bucket: string, prefix = ''): Promise<Map<string, string>> {
  const { data } = await sdk<{ items: Array<{ key: string; hash: string }> }>(server.bucketManager().listPrefix(bucket, { prefix, limit: 1000 }));
  return new Map(data.items.map((i) => [i.key, i.hash]));
}

describe('transfer: remotes, bad input, sync', { timeout: 120_000 }, () => {
  let server: TestServer;
  let work: string;
  let dir: string;
  let cli: TransferCli;

  beforeAll(async () => {
    server = await startTestServer();
    work = await mkdtemp(join(tmpdir(), 'granary-transfer-cli-test-'));
    cli = await TransferCli.create(join(work, 'config'));
    dir = join(work, 'src');
    await mkdir(join(dir, 'photos'), { recursive: true });
    for (const p of PHOTOS) await copyFile(join(FIXTURE_IMAGES, p), join(dir, 'photos', p));
    await writeSmallFiles(join(dir, 'small'), 20, 700);
    await sdk(server.bucketManager().createBucket('box', {} as never));
    await sdk(server.bucketManager().createBucket('box2', {} as never));
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('remote add, list and remove; the profile file is 0600 in a 0700 directory', async () => {
    // Through the real `granary` entry once: the commands are registered there.
    expect((await cli.run(['remote', 'add', 'local', '--ak', AK, '--sk', SK, '--uc-host', server.host])).status).toBe(0);
    // Remotes with keys the server refuses are saved only without the key check (remote add lists the buckets).
    expect((await cli.run(['remote', 'add', 'badsk', '--ak', AK, '--sk', 'not-the-secret', '--uc-host', server.host])).status).toBe(1);
    expect((await cli.run(['remote', 'add', 'badsk', '--ak', AK, '--sk', 'not-the-secret', '--uc-host', server.host, '--no-check'])).status).toBe(0);
    expect((await cli.run(['remote', 'add', 'stranger', '--ak', 'nobody', '--sk', 'x', '--uc-host', server.host, '--no-check'])).status).toBe(0);
    expect((await cli.run(['remote', 'add', 'gone', '--ak', 'a', '--sk', 'b', '--region', 'z1', '--https', '--no-check'])).status).toBe(0);
    expect((await stat(join(cli.configDir, 'remotes.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(cli.configDir)).mode & 0o777).toBe(0o700);
    const list = await cli.run(['remote', 'list']);
    expect(list.stdout).toContain(`local\t${AK}\tuc ${server.host}`);
    expect(list.stdout).toContain('gone\ta\tregion z1\thttps');
    expect(list.stdout).not.toContain(SK);
    expect((await cli.run(['remote', 'remove', 'gone'])).stdout).toBe('removed remote gone\n');
    expectOneLineError(await cli.run(['remote', 'remove', 'gone']), /unknown remote "gone"/);
    expectOneLineError(await cli.run(['remote', 'add', 'x', '--ak', 'a', '--sk', 'b', '--up-host', 'http://h:1']), /without a scheme/);
  });

  it('bad input: one line, exit status 1, no stack', async () => {
    const photo = join(dir, 'photos', PHOTOS[0]!);
    expectOneLineError(await cli.run(['put', photo, 'nowhere:box']), /unknown remote "nowhere"/);
    expectOneLineError(await cli.run(['put', photo, 'badsk:box']), /refused \(401/);
    expectOneLineError(await cli.run(['get', 'stranger:box/a', work]), /AccessKey nobody is not known there \(612/);
    expectOneLineError(await cli.run(['put', photo, 'local:missing-bucket']), /bucket missing-bucket: no such bucket \(631\)/);
    expectOneLineError(await cli.run(['put', join(work, 'no-such-dir'), 'local:box']), /cannot read .*no-such-dir/);
    expectOneLineError(await cli.run(['put', join(photo, 'inside'), 'local:box']), /cannot read .*ENOTDIR/);
    expectOneLineError(await cli.run(['get', 'local:box/no/such/key', join(work, 'x')]), /no object matches "no\/such\/key"/);
    expectOneLineError(await cli.run(['sync', dir, 'local:box', '--concurrency', '0']), /--concurrency must be a positive integer/);
    expectOneLineError(await cli.run(['put', photo, 'local:box', '--bwlimit', 'fast']), /--bwlimit/);
    expect(await keysOf(server, 'box')).toEqual(new Map());
  });

  it('names single files: a key, a prefix ending in /, into a local directory', async () => {
    const photo = join(dir, 'photos', PHOTOS[0]!);
    expect((await cli.run(['put', photo, 'local:box/one/canon.jpg', '--quiet'])).status).toBe(0);
    expect((await cli.run(['put', photo, 'local:box/one/', '--quiet'])).status).toBe(0);
    expect([...(await keysOf(server, 'box', 'one/')).keys()].sort()).toEqual(['one/Canon_40D.jpg', 'one/canon.jpg']);
    const out = join(work, 'single');
    await mkdir(out);
    const r = await cli.run(['get', 'local:box/one/canon.jpg', out, '--quiet']);
    expect(r.stdout).toMatch(/^get: 1 copied, 0 skipped, 0 failed/);
    expect(await readFile(join(out, 'canon.jpg'))).toEqual(await readFile(photo));
  });

  it('syncs a directory to a bucket: dry run, then only what differs, --delete, include/exclude', async () => {
    const dry = await cli.run(['sync', dir, 'local:box/s', '--dry-run', '--quiet']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout.split('\n').filter((l) => l.startsWith('copy\t'))).toHaveLength(24);
    expect(dry.stdout).toContain('copy\tphotos/Canon_40D.jpg\t(new)');
    expect(await keysOf(server, 'box', 's/')).toEqual(new Map());

    const first = await cli.json(['sync', dir, 'local:box/s']);
    expect(summaryOf(first.events)).toMatchObject({ copied: 24, skipped: 0, failed: 0 });
    const remote = await keysOf(server, 'box', 's/');
    expect(remote.get('s/photos/Nikon_D70.jpg')).toBe(await fileEtag(join(dir, 'photos', 'Nikon_D70.jpg')));

    // Same size, other bytes; a new file; a deleted one.
    const changed = join(dir, 'small', 'd3', 'f0003.bin');
    await writeFile(changed, Buffer.alloc(700, 9));
    await writeFile(join(dir, 'small', 'new.txt'), 'new');
    await rm(join(dir, 'small', 'd4', 'f0004.bin'));
    // A dry run names copies and deletions alike: the path relative to the synced roots.
    const plan = await cli.run(['sync', dir, 'local:box/s', '--delete', '--dry-run', '--quiet']);
    expect(plan.stdout.split('\n').filter((l) => /^(copy|delete)\t/.test(l)).sort()).toEqual([
      'copy\tsmall/d3/f0003.bin\t(etag)',
      'copy\tsmall/new.txt\t(new)',
      'delete\tsmall/d4/f0004.bin',
    ]);
    const second = await cli.json(['sync', dir, 'local:box/s', '--delete', '--bwlimit', '20M']);
    expect(second.events.filter((e) => e.action === 'deleted').map((e) => e.key)).toEqual(['small/d4/f0004.bin']);
    expect(summaryOf(second.events)).toMatchObject({ copied: 2, skipped: 22, deleted: 1, failed: 0 });
    const copied = second.events.filter((e) => e.action === 'copied').map((e) => e.key).sort();
    expect(copied).toEqual(['small/d3/f0003.bin', 'small/new.txt']);
    const after = await keysOf(server, 'box', 's/');
    expect(after.has('s/small/d4/f0004.bin')).toBe(false);
    expect(after.get('s/small/d3/f0003.bin')).toBe(await fileEtag(changed));

    const only = await cli.json(['sync', dir, 'local:box/jpg', '--include', '*.jpg', '--exclude', 'gps_*']);
    expect(summaryOf(only.events)).toMatchObject({ copied: 3, failed: 0 });
    expect([...(await keysOf(server, 'box', 'jpg/')).keys()].sort()).toEqual(['jpg/photos/Canon_40D.jpg', 'jpg/photos/Nikon_D70.jpg', 'jpg/photos/orientation_landscape_6.jpg']);
  });

  it('syncs a bucket to a directory and to another bucket; a second sync copies nothing', async () => {
    const out = join(work, 'mirror');
    const down = await cli.json(['sync', 'local:box/s', out]);
    expect(summaryOf(down.events)).toMatchObject({ copied: 24, failed: 0 });
    expect(await readFile(join(out, 'photos', 'Canon_40D.jpg'))).toEqual(await readFile(join(dir, 'photos', 'Canon_40D.jpg')));
    expect((await readdir(join(out, 'small'))).sort()).toEqual((await readdir(join(dir, 'small'))).sort());
    const again = await cli.json(['sync', 'local:box/s', out]);
    expect(summaryOf(again.events)).toMatchObject({ copied: 0, skipped: 24, failed: 0 });

    const across = await cli.json(['sync', 'local:box/s', 'local:box2/copy']);
    expect(summaryOf(across.events)).toMatchObject({ copied: 24, failed: 0 });
    const a = await keysOf(server, 'box', 's/');
    const b = await keysOf(server, 'box2', 'copy/');
    expect(b.size).toBe(24);
    for (const [k, h] of a) expect(b.get(`copy/${k.slice(2)}`), k).toBe(h);
  });
});
