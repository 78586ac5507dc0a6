/**
 * The `granary` command as a subprocess (bin/granary.js; test/global-setup.ts builds dist/ when older than src/): offline bucket/domain/keys commands
 * on a data dir, `serve` printing a generated key pair once, warning a single process without node's
 * --initial-old-space-size, graceful shutdown on SIGTERM, and `bucket nrop`
 * with the compiled server's moderation worker.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, runCli, sdkFor, ServeProcess } from '../helpers/cli.js';
import { rawRequest, upload as uploadVia } from '../helpers/http.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';
import { AK, SK, sdk, startTestServer } from '../helpers/server.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'granary-cli-'));
  dirs.push(d);
  return d;
}

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('offline commands', () => {
  let D: string;
  beforeAll(async () => {
    D = await tempDir();
  });
  const cli = (...args: string[]) => runCli([...args, '--data-dir', D]);

  it('creates, lists and deletes buckets', () => {
    const created = cli('bucket', 'create', 'b01');
    expect(created).toMatchObject({ status: 0, stdout: 'created bucket b01\n' });
    expect(cli('bucket', 'create', 'b02', '--private')).toMatchObject({ status: 0, stdout: 'created bucket b02 (private)\n' });
    expect(cli('bucket', 'list')).toMatchObject({ status: 0, stdout: 'b01\tz0\tpublic\troot\t0 files\t0 bytes\nb02\tz0\tprivate\troot\t0 files\t0 bytes\n' });

    const again = cli('bucket', 'create', 'b01');
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/\(614\)/);
    const short = cli('bucket', 'create', 'b1');
    expect(short.status).toBe(1);
    expect(short.stderr).toMatch(/invalid bucket name.*\(400\)/);
    const bad = cli('bucket', 'create', 'Bad_Name');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/\(400\)/);
    const reserved = cli('bucket', 'create', 'stat');
    expect(reserved.status).toBe(1);
    expect(reserved.stderr).toMatch(/reserved.*\(400\)/);

    expect(cli('bucket', 'delete', 'b02')).toMatchObject({ status: 0, stdout: 'deleted bucket b02\n' });
    expect(cli('bucket', 'list')).toMatchObject({ status: 0, stdout: 'b01\tz0\tpublic\troot\t0 files\t0 bytes\n' });
    const missing = cli('bucket', 'delete', 'b02');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/\(631\)/);
  });

  it('binds and lists domains', () => {
    expect(cli('domain', 'bind', 'DL.Example.Test', 'b01')).toMatchObject({ status: 0, stdout: 'bound dl.example.test to bucket b01\n' });
    expect(cli('domain', 'list', 'b01')).toMatchObject({ status: 0, stdout: 'dl.example.test\n' });
    const noBucket = cli('domain', 'bind', 'x.example.test', 'nope');
    expect(noBucket.status).toBe(1);
    expect(noBucket.stderr).toMatch(/\(631\)/);
    const badDomain = cli('domain', 'bind', 'not a domain', 'b01');
    expect(badDomain.status).toBe(1);
    expect(badDomain.stderr).toMatch(/\(400\)/);
    // Deleting the bucket drops its bindings: the name can be bound again elsewhere.
    expect(cli('bucket', 'create', 'b03').status).toBe(0);
    expect(cli('domain', 'bind', 'dl.example.test', 'b03').status).toBe(1);
    expect(cli('bucket', 'delete', 'b01').status).toBe(0);
    expect(cli('domain', 'list', 'b01')).toMatchObject({ status: 0, stdout: '' });
    expect(cli('domain', 'bind', 'dl.example.test', 'b03')).toMatchObject({ status: 0 });
  });

  it('creates, updates and lists pipelines (0.default always there)', () => {
    expect(cli('pipeline', 'create', 'thumbs', '--concurrency', '3')).toMatchObject({ status: 0, stdout: 'created pipeline thumbs (concurrency 3)\n' });
    expect(cli('pipeline', 'create', 'thumbs', '--concurrency', '0')).toMatchObject({ status: 0, stdout: 'updated pipeline thumbs (concurrency 0)\n' });
    expect(cli('pipeline', 'list')).toMatchObject({ status: 0, stdout: '0.default\t2\nthumbs\t0\n' });
    const bad = cli('pipeline', 'create', 'bad name');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/pipeline name.*\(400\)/);
    expect(cli('pipeline', 'create', 'x', '--concurrency', '99').stderr).toMatch(/concurrency.*\(400\)/);
  });

  it('sets, lists and removes image styles; a server on the data dir serves them', async () => {
    expect(cli('bucket', 'create', 'styled01').status).toBe(0);
    expect(cli('bucket', 'style', 'styled01', 'thumb', 'imageView2/1/w/20/h/10')).toMatchObject({
      status: 0,
      stdout: 'style thumb of bucket styled01: imageView2/1/w/20/h/10\n',
    });
    expect(cli('bucket', 'style', 'styled01', 'gone', 'imageInfo').status).toBe(0);
    // A separator list starting with `-` follows `--` (options first), like any such argument.
    expect(runCli(['bucket', 'separator', '--data-dir', D, 'styled01', '--', '-!'])).toMatchObject({ status: 0 });
    expect(cli('bucket', 'unstyle', 'styled01', 'gone')).toMatchObject({ status: 0, stdout: 'removed style gone of bucket styled01\n' });
    expect(cli('bucket', 'styles', 'styled01')).toMatchObject({ status: 0, stdout: 'separator\t-!\nthumb\timageView2/1/w/20/h/10\n' });
    const badFop = cli('bucket', 'style', 'styled01', 'x', 'imageView2/9');
    expect(badFop.status).toBe(1);
    expect(badFop.stderr).toMatch(/mode must be 0\.\.5.*\(400\)/);
    expect(cli('bucket', 'style', 'nope-bucket', 'x', 'imageInfo').stderr).toMatch(/\(631\)/);
    expect(cli('bucket', 'separator', 'styled01', 'ab').stderr).toMatch(/separator.*\(400\)/);

    const s = await startTestServer({ GRANARY_DATA_DIR: D });
    try {
      const photo = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#808080' } }).jpeg().toBuffer();
      await uploadVia(s, 'styled01', 'p.jpg', photo);
      const res = await fetch(`${s.url}/styled01/p.jpg!thumb`);
      expect(res.status).toBe(200);
      expect(await sharp(Buffer.from(await res.arrayBuffer())).metadata()).toMatchObject({ width: 20, height: 10 });
    } finally {
      await s.running.close();
    }
  });

  it('keys show generates a pair once, keeps it in credentials.json and shows it identically', async () => {
    const K = await tempDir();
    expect(existsSync(join(K, 'credentials.json'))).toBe(false);
    const first = runCli(['keys', 'show', '--data-dir', K]);
    expect(first.status).toBe(0);
    const m = /^AccessKey: (\S+)\nSecretKey: (\S+)\n$/.exec(first.stdout);
    expect(m).not.toBeNull();
    const stored = JSON.parse(await readFile(join(K, 'credentials.json'), 'utf8')) as Record<string, string>;
    expect(stored).toEqual({ accessKey: m![1], secretKey: m![2] });
    const second = runCli(['keys', 'show', '--data-dir', K]);
    expect(second).toMatchObject({ status: 0, stdout: first.stdout });
    // Explicit keys win over the stored pair and are not written.
    const explicit = runCli(['keys', 'show', '--data-dir', K], { GRANARY_ACCESS_KEY: 'ak1', GRANARY_SECRET_KEY: 'sk1' });
    expect(explicit.stdout).toBe('AccessKey: ak1\nSecretKey: sk1\n');
    expect(JSON.parse(await readFile(join(K, 'credentials.json'), 'utf8'))).toEqual(stored);
  });
});

describe('serve', () => {
  let D: string;
  let port: number;
  let server: ServeProcess | undefined;
  let keys: { ak: string; sk: string };
  beforeAll(async () => {
    D = await tempDir();
    expect(runCli(['bucket', 'create', 'served', '--data-dir', D]).status).toBe(0);
    expect(runCli(['domain', 'bind', 'dl.example.test', 'served', '--data-dir', D]).status).toBe(0);
    port = await freePort();
    const stored = JSON.parse(await readFile(join(D, 'credentials.json'), 'utf8')) as { accessKey: string; secretKey: string };
    keys = { ak: stored.accessKey, sk: stored.secretKey };
  });
  afterEach(() => server?.kill());

  it('prints the key pair generated at first start, and the SDK works with it', async () => {
    const fresh = await tempDir();
    const first = new ServeProcess(fresh, port);
    server = first;
    await first.ready();
    const m = first.stdout.match(/AccessKey: (\S+)\n\s*SecretKey: (\S+)\n/);
    expect(m).not.toBeNull();
    expect(first.stdout.match(/SecretKey:/g)).toHaveLength(1);
    const stored = JSON.parse(await readFile(join(fresh, 'credentials.json'), 'utf8')) as Record<string, string>;
    expect(stored).toEqual({ accessKey: m![1], secretKey: m![2] });
    const { bucketManager } = sdkFor(first.host, m![1]!, m![2]!);
    expect((await sdk(bucketManager.createBucket('fresh', { regionId: 'z0' }))).status).toBe(200);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const restarted = new ServeProcess(fresh, port);
    server = restarted;
    await restarted.ready();
    expect(restarted.stdout).not.toMatch(/SecretKey|AccessKey/);
    expect((await sdk<string[]>(sdkFor(restarted.host, m![1]!, m![2]!).bucketManager.listBucket())).data).toEqual(['fresh']);
    restarted.child.kill('SIGTERM');
    expect((await restarted.exited).code).toBe(0);
  });

  it('one process warns at start when node lacks --initial-old-space-size, and not when it has it', async () => {
    const warning = /"level":40[^\n]*"flag":"--initial-old-space-size=256"[^\n]*one process without node --initial-old-space-size/;
    const plain = new ServeProcess(D, port);
    server = plain;
    await plain.ready();
    await plain.waitFor(warning);
    plain.child.kill('SIGTERM');
    expect((await plain.exited).code).toBe(0);

    const flagged = new ServeProcess(D, port, { nodeArgs: ['--initial-old-space-size=256'] });
    server = flagged;
    await flagged.ready();
    // The warning would follow the listening line in the same tick: one answered request later it would be out.
    expect((await rawRequest({ port, path: '/health/live' })).status).toBe(200);
    expect(flagged.stdout).not.toMatch(/initial-old-space-size/);
    flagged.child.kill('SIGTERM');
    expect((await flagged.exited).code).toBe(0);
  });

  it('serves what the offline commands set up, and finishes an in-flight upload on SIGTERM', async () => {
    const p = new ServeProcess(D, port);
    server = p;
    await p.ready();
    // The offline commands already generated the pair in D: serve does not print it.
    expect(p.stdout).not.toMatch(/SecretKey/);
    const { config, uploadToken } = sdkFor(p.host, keys.ak, keys.sk);

    const up = new qiniu.form_up.FormUploader(config);
    const put = await sdk(up.put(uploadToken('served'), 'first.txt', Buffer.from('first'), new qiniu.form_up.PutExtra()));
    expect(put.status).toBe(200);
    const viaDomain = await rawRequest({ port, path: '/first.txt', headers: { Host: 'dl.example.test' } });
    expect(viaDomain.status).toBe(200);
    expect(viaDomain.body.toString()).toBe('first');

    // A slow streamed form upload: headers (acknowledged by 100-continue), half the body, SIGTERM, the rest.
    const boundary = 'granaryBoundary7d2f';
    const part = (name: string, value: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const head =
      part('token', uploadToken('served:slow.bin')) +
      part('key', 'slow.bin') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    const content = Buffer.alloc(2 * 1024 * 1024, 'abcdefgh');
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/',
      agent: false,
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, Expect: '100-continue' },
    });
    const response = once(req, 'response') as Promise<[IncomingMessage]>;
    req.flushHeaders();
    await once(req, 'continue');
    req.write(head);
    req.write(content.subarray(0, content.length / 2));

    p.child.kill('SIGTERM');
    await p.waitFor(/closing: refusing new requests/);
    // Shutdown is under way: a new request is refused (connection refused, or 503 while the listener closes).
    const late = await rawRequest({ port, path: '/served/first.txt' }).then(
      (r) => r.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect([503, 'ECONNREFUSED', 'ECONNRESET']).toContain(late);
    req.write(content.subarray(content.length / 2));
    const sentAt = Date.now();
    req.end(`\r\n--${boundary}--\r\n`);
    const [res] = await response;
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(Buffer.concat(chunks).toString())).toMatchObject({ key: 'slow.bin', hash: expect.any(String) });

    const exit = await p.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - sentAt).toBeLessThan(5000);

    // The upload was committed: it is there after a restart.
    const again = new ServeProcess(D, port);
    server = again;
    await again.ready();
    const res2 = await fetch(`${again.url}/served/slow.bin`);
    expect(res2.status).toBe(200);
    expect(Buffer.from(await res2.arrayBuffer()).equals(content)).toBe(true);
    again.child.kill('SIGTERM');
    expect((await again.exited).code).toBe(0);
  });
});

describe('bucket nrop', () => {
  it('switches the nrop fop offline and on the data dir of a running server, whose model worker runs from dist/', async () => {
    const F = await tempDir();
    const cli = (...args: string[]) => runCli([...args, '--data-dir', F]);
    expect(cli('bucket', 'create', 'moderated').status).toBe(0);
    expect(cli('bucket', 'nrop', 'moderated', 'on')).toMatchObject({ status: 0, stdout: 'nrop enabled for bucket moderated\n' });
    expect(cli('bucket', 'nrop', 'moderated', 'maybe')).toMatchObject({ status: 1, stderr: expect.stringMatching(/on or off/) });
    expect(cli('bucket', 'nrop', 'nope', 'on')).toMatchObject({ status: 1, stderr: expect.stringMatching(/\(631\)/) });
    const stored = JSON.parse(await readFile(join(F, 'credentials.json'), 'utf8')) as { accessKey: string; secretKey: string };
    const p = new ServeProcess(F, await freePort());
    try {
      await p.ready();
      const { config, uploadToken } = sdkFor(p.host, stored.accessKey, stored.secretKey);
      const photo = await readFile(join(FIXTURE_IMAGES, 'Nikon_D70.jpg'));
      const up = new qiniu.form_up.FormUploader(config);
      expect((await sdk(up.put(uploadToken('moderated'), 'photo.jpg', photo, new qiniu.form_up.PutExtra()))).status).toBe(200);
      const on = await fetch(`${p.url}/moderated/photo.jpg?nrop`);
      expect(on.status).toBe(200);
      expect(await on.json()).toMatchObject({ code: 0, fileList: [{ label: 2, name: 'photo.jpg', review: false }], statistic: [0, 0, 1] });
      expect(cli('bucket', 'nrop', 'moderated', 'off')).toMatchObject({ status: 0, stdout: 'nrop disabled for bucket moderated\n' });
      const off = await fetch(`${p.url}/moderated/photo.jpg?nrop`);
      expect(off.status).toBe(403);
      p.child.kill('SIGTERM');
      expect(await p.exited).toEqual({ code: 0, signal: null });
    } finally {
      p.kill();
    }
  });
});

describe('entry commands (stat, cp, mv, rm) on the data dir of a running server', () => {
  it('act like the management API, sharing bytes and freeing them', async () => {
    const s = await startTestServer();
    try {
      const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir, '--access-key', AK, '--secret-key', SK]);
      expect((await sdk(s.bucketManager().createBucket('cli-entries', { regionId: 'z0' }))).status).toBe(200);
      const up = new qiniu.form_up.FormUploader(s.zoneConfig());
      const put = await sdk(up.put(s.uploadToken({ scope: 'cli-entries' }), 'a:b.txt', Buffer.from('abc'), new qiniu.form_up.PutExtra()));
      expect(put.status).toBe(200);

      const stat = cli('stat', 'cli-entries:a:b.txt');
      expect(stat.status).toBe(0);
      expect(JSON.parse(stat.stdout)).toMatchObject({ fsize: 3, hash: 'FqmZPjZHBoFquj4lcXhQwmyc0Nid', type: 0 });
      expect(stat.stdout).toMatch(/"putTime":\d{17}\b/);

      expect(cli('cp', 'cli-entries:a:b.txt', 'cli-entries:copy.txt')).toMatchObject({ status: 0 });
      expect(cli('cp', 'cli-entries:a:b.txt', 'cli-entries:copy.txt')).toMatchObject({ status: 1, stderr: expect.stringMatching(/614/) });
      expect(cli('mv', 'cli-entries:copy.txt', 'cli-entries:moved.txt')).toMatchObject({ status: 0 });
      const ls = cli('ls', 'cli-entries');
      expect(ls.status).toBe(0);
      expect(ls.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0])).toEqual(['a:b.txt', 'moved.txt']);
      expect(ls.stdout).toMatch(/^a:b\.txt\t3\tFqmZPjZHBoFquj4lcXhQwmyc0Nid\t[^\t]+\t\d{17}$/m);
      const rolled = cli('ls', 'cli-entries', '--delimiter', ':').stdout.split('\n').filter(Boolean);
      expect(rolled.map((l) => l.split('\t')[0])).toEqual(['a:', 'moved.txt']);
      expect(await (await fetch(`${s.url}/cli-entries/moved.txt`)).text()).toBe('abc');
      expect((await fetch(`${s.url}/cli-entries/copy.txt`)).status).toBe(404);

      expect(cli('rm', 'cli-entries:moved.txt', 'cli-entries:a:b.txt')).toMatchObject({ status: 0 });
      expect(cli('rm', 'cli-entries:moved.txt')).toMatchObject({ status: 1, stderr: expect.stringMatching(/612/) });
      expect(cli('stat', 'no-colon')).toMatchObject({ status: 1, stderr: expect.stringMatching(/<bucket>:<key>/) });
      expect((await fetch(`${s.url}/cli-entries/a:b.txt`)).status).toBe(404);

      // Versions on the data dir: versioning enabled, a key overwritten, its versions listed, the first restored.
      expect(cli('bucket', 'versioning', 'cli-entries', 'enable').stdout).toBe('versioning of bucket cli-entries: Enabled\n');
      for (const body of ['one', 'second']) {
        expect((await sdk(up.put(s.uploadToken({ scope: 'cli-entries:v.txt' }), 'v.txt', Buffer.from(body), new qiniu.form_up.PutExtra()))).status).toBe(200);
      }
      const versions = cli('ls', 'cli-entries', '--prefix', 'v', '--versions').stdout.split('\n').filter(Boolean).map((l) => l.split('\t'));
      expect(versions.map(([key, , size, , state]) => [key, size, state])).toEqual([
        ['v.txt', '6', 'current'],
        ['v.txt', '3', 'noncurrent'],
      ]);
      expect(cli('restore', 'cli-entries:v.txt', '--version-id', versions[1]![1]!)).toMatchObject({ status: 0, stdout: expect.stringMatching(/^restored cli-entries:v\.txt version [0-9a-f]{32} \(new version [0-9a-f]{32}\)\n$/) });
      expect(await (await fetch(`${s.url}/cli-entries/v.txt`)).text()).toBe('one');
    } finally {
      await s.stop();
    }
  });
});
