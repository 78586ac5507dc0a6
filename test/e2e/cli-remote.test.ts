/**
 * The CLI's remote commands against real servers (in this process; `granary` spawned: bin/granary.js, dist/):
 * `remote add` checking the keys; `ls`, `stat`, `rm`, `cp`, `mv`, `chgm`, `chtype`, `url`, `fetch`, `prefetch`,
 * `pfop`/`prefop`, `buckets`, `domains`, `qetag` with their `--json` shapes; a batch of 2,500 keys from a file with
 * one missing key reported and the exit status 1; `get` twice (nothing copied the second time); and the offline
 * commands run in an empty folder (refused, no data dir created). A second server with its own keys plays the
 * other remote: `fetch` pulls from the first, `cp` between remotes is refused.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileEtag } from '../../src/transfer/local-etag.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { BIN, cleanEnv, runAsync } from '../helpers/cli.js';
import { s3Client } from '../helpers/s3.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { summaryOf, TransferCli, type RunResult } from '../helpers/transfer.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';

const OTHER = { GRANARY_ACCESS_KEY: 'other-ak', GRANARY_SECRET_KEY: 'other-sk' };

/** JSON lines of a run's stdout. */
function lines(r: RunResult): Array<Record<string, unknown>> {
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{') || l.startsWith('['))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

// Generous limits: the machine is shared; nothing here asserts a duration.
describe('remote commands', { timeout: 240_000 }, () => {
  let server: TestServer;
  let other: TestServer;
  let work: string;
  let cli: TransferCli;
  let photo: string;

  beforeAll(async () => {
    [server, other] = await Promise.all([startTestServer(), startTestServer({ ...OTHER, GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' })]);
    work = await mkdtemp(join(tmpdir(), 'granary-cli-remote-'));
    cli = await TransferCli.create(join(work, 'config'));
    await sdk(server.bucketManager().createBucket('box', {} as never));
    const otherMac = new qiniu.auth.digest.Mac(OTHER.GRANARY_ACCESS_KEY, OTHER.GRANARY_SECRET_KEY);
    expect((await sdk(new qiniu.rs.BucketManager(otherMac, other.zoneConfig()).createBucket('pulled', {} as never))).status).toBe(200);
    photo = join(FIXTURE_IMAGES, 'Canon_40D.jpg');
  }, 60_000);

  afterAll(async () => {
    await Promise.all([server?.stop(), other?.stop()]);
    await rm(work, { recursive: true, force: true });
  });

  it('remote add checks the keys by listing the buckets; --no-check skips it', async () => {
    const bad = await cli.run(['remote', 'add', 'bad', '--ak', AK, '--sk', 'wrong', '--uc-host', server.host]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/^granary: remote bad: the AccessKey\/SecretKey were refused \(401.*not saved/);
    expect((await cli.run(['remote', 'list'])).stdout).not.toContain('bad');
    expect((await cli.run(['remote', 'add', 'bad', '--ak', AK, '--sk', 'wrong', '--uc-host', server.host, '--no-check'])).status).toBe(0);
    const good = await cli.run(['remote', 'add', 'loc', '--ak', AK, '--sk', SK, '--uc-host', server.host]);
    expect(good).toMatchObject({ status: 0, stdout: expect.stringMatching(/remote loc saved in .*remotes\.json \(keys checked: 1 bucket\)/) });
    expect((await cli.run(['remote', 'add', 'oth', '--ak', OTHER.GRANARY_ACCESS_KEY, '--sk', OTHER.GRANARY_SECRET_KEY, '--uc-host', other.host])).status).toBe(0);
    expect((await cli.run(['buckets', 'loc'])).stdout).toBe('box\n');
    expect(lines(await cli.run(['buckets', 'oth', '--json']))).toEqual([['pulled']]);
  });

  it('put, ls, stat, cp, mv, chgm, chtype, url, rm on a remote, with --json shapes', async () => {
    expect((await cli.run(['put', photo, 'loc:box/p/canon.jpg', '--quiet'])).status).toBe(0);
    const etag = await fileEtag(photo);

    const ls = await cli.run(['ls', 'loc:box']);
    expect(ls.stdout).toMatch(new RegExp(`^p/canon\\.jpg\\t\\d+\\t${etag}\\timage/jpeg\\t\\d+\\n$`));
    const stat = await cli.run(['stat', 'loc:box/p/canon.jpg']);
    expect(JSON.parse(stat.stdout)).toMatchObject({ key: 'p/canon.jpg', hash: etag, mimeType: 'image/jpeg', type: 0 });

    expect((await cli.run(['cp', 'loc:box/p/canon.jpg', 'loc:box/q/'])).stdout).toBe('loc:box/p/canon.jpg -> loc:box/q/canon.jpg\n');
    const exists = await cli.run(['cp', 'loc:box/p/canon.jpg', 'loc:box/q/canon.jpg', '--json']);
    expect(exists.status).toBe(1);
    expect(lines(exists)[0]).toMatchObject({ event: 'result', op: 'cp', key: 'p/canon.jpg', code: 614, to: { bucket: 'box', key: 'q/canon.jpg' } });
    expect((await cli.run(['mv', 'loc:box/q/canon.jpg', 'loc:box/q/moved.jpg'])).status).toBe(0);
    expect((await cli.run(['chgm', 'loc:box/q/moved.jpg', 'image/x-test'])).stdout).toBe('loc:box/q/moved.jpg: MIME type image/x-test\n');
    expect((await cli.run(['chtype', 'loc:box/q/moved.jpg', '1'])).status).toBe(0);
    expect((await cli.run(['chtype', 'loc:box/q/moved.jpg', '9'])).stderr).toMatch(/storage class is 0 .* got "9"/);

    const listed = lines(await cli.run(['ls', 'loc:box/q/', '--json']));
    expect(listed).toEqual([{ key: 'q/moved.jpg', fsize: expect.any(Number), hash: etag, mimeType: 'image/x-test', putTime: expect.any(Number), type: 1 }]);
    expect(lines(await cli.run(['ls', 'loc:box', '--delimiter', '/', '--json']))).toEqual([{ prefix: 'p/' }, { prefix: 'q/' }]);
    expect(lines(await cli.run(['ls', 'loc:box', '--json', '--limit', '1']))).toHaveLength(1);

    const stats = await cli.run(['stat', 'loc:box/q/moved.jpg', 'loc:box/q/none', '--json']);
    expect(stats.status).toBe(1);
    expect(lines(stats)).toEqual([
      { event: 'result', op: 'stat', bucket: 'box', key: 'q/moved.jpg', code: 200, entry: expect.objectContaining({ key: 'q/moved.jpg', hash: etag, type: 1 }) },
      { event: 'result', op: 'stat', bucket: 'box', key: 'q/none', code: 612, error: expect.any(String) },
      { event: 'summary', op: 'stat', total: 2, ok: 1, failed: 1 },
    ]);

    const url = lines(await cli.run(['url', 'loc:box/q/moved.jpg', '--expires', '600', '--json']))[0]!;
    expect(url).toMatchObject({ bucket: 'box', key: 'q/moved.jpg', url: expect.stringMatching(/\?e=\d+&token=/) });
    const body = Buffer.from(await (await fetch(String(url.url))).arrayBuffer());
    expect(body).toEqual(await readFile(photo));

    expect(lines(await cli.run(['qetag', photo, '--json']))).toEqual([{ file: photo, etag, size: body.length }]);
    expect(lines(await cli.run(['domains', 'loc:box', '--json']))).toEqual([[]]);

    expect((await cli.run(['rm', 'loc:box/q/moved.jpg'])).stdout).toBe('deleted loc:box/q/moved.jpg\n');
    const again = await cli.run(['rm', 'loc:box/q/moved.jpg']);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^failed: q\/moved\.jpg: .* \(612\)$/m);
    const across = await cli.run(['cp', 'loc:box/p/canon.jpg', 'oth:pulled/canon.jpg']);
    expect(across).toMatchObject({ status: 1, stderr: expect.stringMatching(/inside one remote.*sync or granary migrate/) });
  });

  it('fetch, batch fetch, prefetch, pfop --wait and prefop', async () => {
    const { url } = lines(await cli.run(['url', 'loc:box/p/canon.jpg', '--json']))[0] as { url: string };
    const one = await cli.run(['fetch', url, 'oth:pulled/one.jpg', '--json']);
    expect(one.status, one.stderr).toBe(0);
    expect(lines(one)[0]).toMatchObject({ key: 'one.jpg', hash: await fileEtag(photo), fsize: expect.any(Number) });
    const list = join(work, 'urls.txt');
    await writeFile(list, `${url}\tbatch/a.jpg\n${url}\tbatch/b.jpg\nhttp://127.0.0.1:1/nothing\tbatch/c.jpg\n`);
    const batch = await cli.run(['fetch', 'oth:pulled', '--from', list, '--json']);
    expect(batch.status).toBe(1);
    const results = lines(batch);
    expect(results.filter((r) => r.event === 'result' && r.code === 200).map((r) => r.key).sort()).toEqual(['batch/a.jpg', 'batch/b.jpg']);
    expect(results.find((r) => r.key === 'batch/c.jpg')).toMatchObject({ event: 'result', op: 'fetch', error: expect.any(String) });
    expect(results.at(-1)).toEqual({ event: 'summary', op: 'fetch', total: 3, ok: 2, failed: 1 });

    // No mirror origin is set for the bucket: the failure is reported per key.
    const pre = await cli.run(['prefetch', 'loc:box/p/canon.jpg', '--json']);
    expect(pre.status).toBe(1);
    expect(lines(pre)[0]).toMatchObject({ event: 'result', op: 'prefetch', key: 'p/canon.jpg', code: expect.any(Number), error: expect.any(String) });

    const saveas = Buffer.from('box:p/thumb.png').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
    const done = await cli.run(['pfop', 'loc:box/p/canon.jpg', `imageView2/2/w/20/format/png|saveas/${saveas}`, '--wait']);
    expect(done.status, done.stderr).toBe(0);
    const status = JSON.parse(done.stdout) as { id: string; code: number };
    expect(status.code).toBe(0);
    expect(JSON.parse((await cli.run(['prefop', 'loc', status.id])).stdout)).toMatchObject({ id: status.id, code: 0 });
    expect(JSON.parse((await cli.run(['stat', 'loc:box/p/thumb.png'])).stdout)).toMatchObject({ mimeType: 'image/png' });
  });

  it('runs a batch of 2,500 keys from a file through /batch; the one missing key is reported, exit status 1', async () => {
    // 2,500 entries made server-side: copies of one upload through /batch (1,000 a call, signed with the SDK's
    // token; plain fetch, whose wait is not cut at the SDK's 5 s on a busy machine).
    const keys = Array.from({ length: 2500 }, (_, i) => `many/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 1000) {
      const body = keys
        .slice(i, i + 1000)
        .map((k) => `op=${encodeURIComponent(qiniu.rs.copyOp('box', 'p/canon.jpg', 'box', k, { force: true }))}`)
        .join('&');
      const url = `${server.url}/batch`;
      const type = 'application/x-www-form-urlencoded';
      const authorization = qiniu.util.generateAccessTokenV2(server.mac, url, 'POST', type, body);
      expect((await fetch(url, { method: 'POST', headers: { authorization, 'content-type': type }, body })).status).toBe(200);
    }
    const file = join(work, 'keys.txt');
    const listed = [...keys.slice(0, 1234), 'many/missing', ...keys.slice(1235)];
    await writeFile(file, `${listed.map((k) => k.slice('many/'.length)).join('\n')}\n`);

    const st = await cli.run(['stat', 'loc:box/many/', '--from', file]);
    expect(st.status).toBe(1);
    expect(st.stdout.trim().split('\n')).toHaveLength(2499);
    expect(st.stderr).toContain('failed: many/missing: ');
    expect(st.stderr).toMatch(/stat: 2499 ok, 1 failed of 2500/);

    const r = await cli.run(['rm', 'loc:box/many/', '--from', file, '--json']);
    expect(r.status).toBe(1);
    const results = lines(r);
    expect(results).toHaveLength(2501);
    expect(results.filter((x) => x.event === 'result' && x.code !== 200)).toEqual([{ event: 'result', op: 'rm', bucket: 'box', key: 'many/missing', code: 612, error: expect.any(String) }]);
    expect(results.at(-1)).toEqual({ event: 'summary', op: 'rm', total: 2500, ok: 2499, failed: 1 });
    const left = lines(await cli.run(['ls', 'loc:box/many/', '--json']));
    expect(left.map((e) => e.key)).toEqual(['many/1234']);
  });

  it('batch cp, mv, chgm and chtype from files', async () => {
    expect((await cli.run(['put', photo, 'loc:box/p/canon.jpg', '--quiet'])).status).toBe(0);
    const file = join(work, 'pairs.txt');
    await writeFile(file, 'p/canon.jpg\tc/one.jpg\r\np/canon.jpg\tc/two.jpg\n\n');
    const cp = await cli.run(['cp', 'loc:box', 'loc:box', '--from', file]);
    expect(cp.status, `${cp.stdout}\n${cp.stderr}`).toBe(0);
    await writeFile(file, 'c/one.jpg\td/one.jpg\n');
    expect((await cli.run(['mv', 'loc:box', 'loc:box', '--from', file])).status).toBe(0);
    await writeFile(file, 'd/one.jpg\ttext/x-one\nc/two.jpg\ttext/x-two\n');
    expect((await cli.run(['chgm', 'loc:box', '--from', file])).status).toBe(0);
    await writeFile(file, 'd/one.jpg\t2\nc/two.jpg\t1\nnope\t1\n');
    const ch = await cli.run(['chtype', 'loc:box', '--from', file, '--json']);
    expect(ch.status).toBe(1);
    expect(lines(ch).at(-1)).toEqual({ event: 'summary', op: 'chtype', total: 3, ok: 2, failed: 1 });
    const entries = lines(await cli.run(['ls', 'loc:box/', '--json'])).filter((e) => /^[cd]\//.test(String(e.key)));
    expect(entries.map((e) => [e.key, e.mimeType, e.type])).toEqual([
      ['c/two.jpg', 'text/x-two', 1],
      ['d/one.jpg', 'text/x-one', 2],
    ]);
  });

  it('get twice: the second run copies nothing (same size and etag)', async () => {
    await mkdir(join(work, 'tree'), { recursive: true });
    for (let i = 0; i < 5; i++) await writeFile(join(work, 'tree', `f${i}.bin`), randomBytes(3000 + i));
    expect((await cli.run(['put', join(work, 'tree'), 'loc:box/tree', '--quiet'])).status).toBe(0);
    const out = join(work, 'got');
    const first = await cli.json(['get', 'loc:box/tree/', out]);
    expect(summaryOf(first.events)).toMatchObject({ copied: 5, skipped: 0, failed: 0 });
    const second = await cli.json(['get', 'loc:box/tree/', out]);
    expect(summaryOf(second.events)).toMatchObject({ copied: 0, skipped: 5, failed: 0, bytes: 0, rate: 0 });
    expect(summaryOf(second.events).skippedBytes).toBe(5 * 3000 + 10);
    expect(second.events.filter((e) => e.event === 'file').every((e) => e.reason === 'same size and etag')).toBe(true);
    const text = await cli.run(['get', 'loc:box/tree/', out]);
    expect(text.stdout).toMatch(/^get: 0 copied, 5 skipped, 0 failed; 0 B in [\d.]+ s \(0 B\/s\); 14\.7 KiB skipped or resumed\n$/);
    // A changed local file is downloaded again.
    await writeFile(join(out, 'f0.bin'), randomBytes(3000));
    expect(summaryOf((await cli.json(['get', 'loc:box/tree/', out])).events)).toMatchObject({ copied: 1, skipped: 4 });
    expect(await readdir(out)).toHaveLength(5);
  });

  it('offline commands in an empty folder refuse to run and create no data dir', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'granary-empty-'));
    try {
      // Spawned without blocking this process: the server answering the remote form runs in it.
      const run = (args: string[]) => runAsync(process.execPath, [BIN, ...args], { cwd: empty, env: cleanEnv({ GRANARY_CONFIG_DIR: cli.configDir }) });
      for (const args of [['keys', 'show'], ['ls', 'box'], ['bucket', 'list']]) {
        const r = await run(args);
        expect(r.status, args.join(' ')).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(new RegExp(`^granary: data dir ${join(empty, 'data').replace(/[/.]/g, '\\$&')} does not exist: .*--data-dir.*--create-data-dir`));
        expect(await readdir(empty)).toEqual([]);
      }
      // An unknown <name>: is an unknown remote, never a data-dir entry.
      const unknown = await run(['stat', 'nosuch:photos/big.bin']);
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toMatch(/unknown remote "nosuch" \(known remotes: bad, loc, oth;/);
      expect(await readdir(empty)).toEqual([]);
      // A known remote name picks the remote form from any folder.
      const remote = await run(['stat', 'loc:box/p/canon.jpg']);
      expect(remote.status, remote.stderr).toBe(0);
      expect(JSON.parse(remote.stdout)).toMatchObject({ key: 'p/canon.jpg' });
      // … unless a data-dir flag asks for the data dir.
      expect((await run(['stat', 'loc:box/p/canon.jpg', '--data-dir', join(empty, 'dd')])).stderr).toMatch(/data dir .*dd does not exist/);
      const made = await run(['keys', 'show', '--create-data-dir']);
      expect(made.status).toBe(0);
      expect(made.stdout).toMatch(/^AccessKey: \S+\nSecretKey: \S+\n$/);
      expect(existsSync(join(empty, 'data', 'credentials.json'))).toBe(true);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('ls --versions, restore --version-id and bucket versioning on a remote through its S3 listener', async () => {
    await sdk(server.bucketManager().createBucket('vbox', {} as never));
    const s3 = s3Client(server.s3Url!, AK, SK);
    try {
      const add = ['remote', 'add', 'ver', '--ak', AK, '--sk', SK, '--uc-host', server.host, '--s3-host', new URL(server.s3Url!).host, '--no-check'];
      expect((await cli.run(add)).status).toBe(0);
      expect((await cli.run(['bucket', 'versioning', 'ver:vbox', 'enable'])).stdout).toBe('versioning of ver:vbox: Enabled\n');
      const v1 = (await s3.send(new PutObjectCommand({ Bucket: 'vbox', Key: 'k', Body: 'one' }))).VersionId!;
      const v2 = (await s3.send(new PutObjectCommand({ Bucket: 'vbox', Key: 'k', Body: 'second' }))).VersionId!;
      const restored = await cli.run(['restore', 'ver:vbox/k', '--version-id', v1]);
      expect(restored.stdout).toMatch(new RegExp(`^restored ver:vbox/k version ${v1} \\(new version [0-9a-f]{32}\\)\\n$`));
      expect(await (await fetch(`${server.url}/vbox/k`)).text()).toBe('one');
      const after = lines(await cli.run(['ls', 'ver:vbox', '--versions', '--json']));
      expect(after.map((v) => [v.versionId === v1 || v.versionId === v2 ? v.versionId : 'new', v.size, v.current, v.deleteMarker])).toEqual([
        ['new', 3, true, false],
        [v2, 6, false, false],
        [v1, 3, false, false],
      ]);
    } finally {
      s3.destroy();
      // The other tests name the remotes they expect: this one's goes.
      expect((await cli.run(['remote', 'remove', 'ver'])).status).toBe(0);
    }
  });

  it('every command given an unknown remote name fails naming it and the known remotes; the data dir is untouched', async () => {
    // The folder a newcomer works in: ./data holds a bucket named like the mistyped remote ("hom" for "loc"), so a
    // command that fell back to the data dir would find it there.
    const folder = await mkdtemp(join(tmpdir(), 'granary-typo-'));
    try {
      const run = (args: string[]) => runAsync(process.execPath, [BIN, ...args], { cwd: folder, env: cleanEnv({ GRANARY_CONFIG_DIR: cli.configDir }) });
      expect((await run(['bucket', 'create', 'hom', '--create-data-dir'])).status).toBe(0);
      await writeFile(join(folder, 'local.txt'), 'local');
      await writeFile(join(folder, 'keys.txt'), 'k1\nk2\n');
      /** Every file under the folder with its size and modification time. */
      const snapshot = async (): Promise<string[]> => {
        const out: string[] = [];
        for (const e of await readdir(folder, { recursive: true, withFileTypes: true })) {
          const path = join(e.parentPath, e.name);
          const st = await stat(path);
          out.push(`${path} ${e.isFile() ? `${st.size} ${st.mtimeMs}` : 'dir'}`);
        }
        return out.sort();
      };
      const before = await snapshot();
      const commands = [
        ['ls', 'hom:quickstart'],
        ['stat', 'hom:quickstart/a.txt'],
        ['rm', 'hom:quickstart/a.txt'],
        ['rm', 'hom:quickstart', '--from', 'keys.txt'],
        ['cp', 'hom:quickstart/a.txt', 'hom:quickstart/b.txt'],
        ['mv', 'hom:quickstart/a.txt', 'hom:quickstart/b.txt'],
        ['chgm', 'hom:quickstart/a.txt', 'text/plain'],
        ['chtype', 'hom:quickstart/a.txt', '1'],
        ['url', 'hom:quickstart/a.txt'],
        ['fetch', 'http://127.0.0.1:9/x', 'hom:quickstart/a.txt'],
        ['prefetch', 'hom:quickstart/a.txt'],
        ['pfop', 'hom:quickstart/a.txt', 'avinfo'],
        ['prefop', 'hom', 'z0.0123456789abcdef01234567'],
        ['buckets', 'hom'],
        ['domains', 'hom:quickstart'],
        ['put', 'local.txt', 'hom:quickstart/a.txt'],
        ['get', 'hom:quickstart/a.txt', 'out.txt'],
        ['sync', '.', 'hom:quickstart'],
        ['sync', 'hom:quickstart', 'copy'],
        ['migrate', 'hom:quickstart', 'loc:box'],
      ];
      // Five at a time (each is a process start); the folder is compared after each batch.
      for (let i = 0; i < commands.length; i += 5) {
        const batch = commands.slice(i, i + 5);
        const results = await Promise.all(batch.map((args) => run(args)));
        for (const [j, r] of results.entries()) {
          const args = batch[j]!;
          expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(1);
          expect(r.stderr, args.join(' ')).toMatch(/unknown remote "hom" \(known remotes: bad, loc, oth;/);
        }
        expect(await snapshot(), batch.map((a) => a.join(' ')).join('; ')).toEqual(before);
      }
      // The data-dir form is the explicit one: with --data-dir, hom:… is the data dir's bucket "hom".
      const local = await run(['ls', 'hom', '--data-dir', join(folder, 'data')]);
      expect(local).toMatchObject({ status: 0, stdout: '' });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
