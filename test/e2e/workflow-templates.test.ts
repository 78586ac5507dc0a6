/**
 * Workflow templates (docs/development/kodo-protocol.md §3.1 persistentWorkflowTemplateID, §9.1 workflowTemplateID): created, listed and
 * deleted with the CLI (`granary workflow …` run in-process through the command tree bin/granary.js uses, on the
 * running server's data dir: the server sees the changes at once) and the
 * management calls (`/workflowTemplates`); run by an upload (FormUploader, ResumeUploader v1 and v2) and by pfop
 * (the SDK's OperationManager with `workflowTemplateID`), the job ending with code 0 and the template's outputs
 * stored; an unknown template refuses the upload before anything is stored (no object, no job); an account can
 * use only its own templates.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Command } from 'commander';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildCli } from '../../src/cli.js';
import { isKodoError } from '../../src/errors.js';
import { signedFetch } from '../helpers/http.js';
import { saveas, startNotifyReceiver, waitFinal, type NotifyReceiver } from '../helpers/pfop.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectError, readAnswer, type RawAnswer } from '../helpers/upload.js';

const B = 'wf-bucket';
const ALICE_B = 'wf-alice';

let s: TestServer;
let notify: NotifyReceiver;
let dir: string;
let alice: qiniu.auth.digest.Mac;

/** A `w`×`h` JPEG of noise (a new content, hence new generated output keys, on every call). */
async function noiseJpeg(w: number, h: number): Promise<Buffer> {
  return sharp({ create: { width: w, height: h, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

/**
 * `granary <args>` on the test server's data dir with its root key pair, through `buildCli()` (what bin/granary.js
 * runs) in this process: stdout captured, a failure reported like `main` does (`<message> (<status>)`, status 1).
 */
async function cli(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const program = buildCli();
  let stdout = '';
  let stderr = '';
  const every = (c: Command): Command[] => [c, ...c.commands.flatMap(every)];
  for (const c of every(program)) c.exitOverride().configureOutput({ writeErr: (t) => void (stderr += t), writeOut: (t) => void (stdout += t) });
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['node', 'granary', ...args, '--data-dir', s.dataDir, '--access-key', AK, '--secret-key', SK]);
    return { status: 0, stdout, stderr };
  } catch (err) {
    stderr += isKodoError(err) ? `${err.message} (${err.status})` : (err as Error).message;
    return { status: 1, stdout, stderr };
  } finally {
    write.mockRestore();
  }
}

/** A management call signed `Qiniu` (v2) by `mac` (root by default). */
async function api(method: string, path: string, opts: { body?: string; contentType?: string; mac?: qiniu.auth.digest.Mac } = {}): Promise<RawAnswer> {
  return readAnswer(
    await signedFetch(s, {
      method,
      path,
      ...(opts.body !== undefined ? { body: opts.body } : {}),
      ...(opts.contentType !== undefined ? { contentType: opts.contentType } : {}),
      ...(opts.mac ? { mac: opts.mac } : {}),
    }),
  );
}

/** `OperationManager.pfop` with `workflowTemplateID` (and no fops) → status and body. */
function pfopTemplate(
  mac: qiniu.auth.digest.Mac,
  bucket: string,
  key: string,
  templateId: string,
  pipeline = '',
): Promise<{ status: number; data: { persistentId?: string; error?: string } }> {
  const om = new qiniu.fop.OperationManager(mac, s.zoneConfig());
  return new Promise((resolve, reject) => {
    om.pfop(bucket, key, null as unknown as string[], pipeline, { workflowTemplateID: templateId }, (err, body, info) => {
      if (err) reject(err);
      else resolve({ status: (info as { statusCode: number }).statusCode, data: body as { persistentId?: string } });
    });
  });
}

/** Form upload of `body` under `key` with `policy` signed by `mac` (root by default). */
function formPut(policy: Record<string, unknown>, key: string, body: Buffer, mac = s.mac) {
  const token = new qiniu.rs.PutPolicy(policy as unknown as qiniu.rs.PutPolicyOptions).uploadToken(mac);
  return sdk<{ persistentId?: string; key?: string; error?: string }>(
    new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, body, new qiniu.form_up.PutExtra()),
  );
}

/** How many jobs the database holds. */
function jobCount(): number {
  const db = new Database(join(s.dataDir, 'meta.db'), { readonly: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM tasks WHERE kind = 'job'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1', GRANARY_NOTIFY_RETRY_MS: '10' });
  notify = await startNotifyReceiver();
  dir = await mkdtemp(join(tmpdir(), 'granary-wf-'));
  await createBucket(s, B);
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
  expect((await sdk(new qiniu.rs.BucketManager(alice, s.zoneConfig()).createBucket(ALICE_B, { regionId: 'z0' }))).status).toBe(200);
});
afterAll(async () => {
  await notify?.close();
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the CLI', () => {
  it('creates, replaces, lists and deletes templates on the data dir; the running server sees them at once', async () => {
    const created = await cli('workflow', 'create', 'cli-thumbs', '--fops', 'imageView2/2/w/64;imageInfo', '--pipeline', '0.default');
    expect(created).toMatchObject({ status: 0, stdout: 'created workflow template cli-thumbs (root)\n' });
    const seen = await api('GET', '/workflowTemplates/cli-thumbs');
    expect(seen.json).toMatchObject({ name: 'cli-thumbs', fops: 'imageView2/2/w/64;imageInfo', pipeline: '0.default', notifyURL: '' });

    const replaced = await cli('workflow', 'create', 'cli-thumbs', '--fops', 'imageInfo', '--notify', 'http://app.example/n');
    expect(replaced).toMatchObject({ status: 0, stdout: 'updated workflow template cli-thumbs (root)\n' });
    expect(await cli('workflow', 'create', 'cli-alice', '--fops', 'imageAve', '--owner', alice.accessKey)).toMatchObject({
      status: 0,
      stdout: `created workflow template cli-alice (${alice.accessKey})\n`,
    });
    // Listed by owner AccessKey: alice's random key sorts before or after the root's, so compare the lines as a set.
    const listed = await cli('workflow', 'list');
    expect(listed.status).toBe(0);
    expect(listed.stdout.trimEnd().split('\n').sort()).toEqual(
      [`${alice.accessKey}\tcli-alice\t-\t-\timageAve`, 'root\tcli-thumbs\t-\thttp://app.example/n\timageInfo'].sort(),
    );
    expect((await cli('workflow', 'list', '--owner', alice.accessKey)).stdout).toBe(`${alice.accessKey}\tcli-alice\t-\t-\timageAve\n`);

    expect(await cli('workflow', 'delete', 'cli-thumbs')).toMatchObject({ status: 0, stdout: 'deleted workflow template cli-thumbs (root)\n' });
    expectError(await api('GET', '/workflowTemplates/cli-thumbs'), 612, /no such workflow template/);
    const again = await cli('workflow', 'delete', 'cli-thumbs');
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/no such workflow template.*\(612\)/);
    // cli-alice is alice's: root's namespace has no such template.
    expect((await cli('workflow', 'delete', 'cli-alice')).status).toBe(1);
    expect((await cli('workflow', 'delete', 'cli-alice', '--owner', alice.accessKey)).status).toBe(0);
  });

  it('refuses bad names, bad commands (named), unknown pipelines and unknown owners', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['workflow', 'create', 'bad name', '--fops', 'imageInfo'], /workflow template name.*\(400\)/],
      [['workflow', 'create', 'x', '--fops', 'imageInfo;bogusCmd/1'], /bogusCmd.*\(400\)/],
      [['workflow', 'create', 'x', '--fops', 'imageInfo', '--pipeline', 'nowhere'], /no such pipeline: nowhere \(400\)/],
      [['workflow', 'create', 'x', '--fops', 'imageInfo', '--notify', 'ftp://x'], /notifyURL.*\(400\)/],
      [['workflow', 'create', 'x', '--fops', 'imageInfo', '--owner', 'nobody'], /no key nobody/],
      [['workflow', 'create', 'x'], /--fops/],
    ];
    for (const [args, re] of cases) {
      const r = await cli(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(re);
    }
    expect((await cli('workflow', 'list')).stdout).toBe('');
  });
});

describe('the management calls', () => {
  it('create (form or JSON) → get → list → replace → delete, for the calling key only', async () => {
    const form = `fops=${encodeURIComponent('imageView2/2/w/32')}&pipeline=0.default`;
    const created = await api('POST', '/workflowTemplates/api-one', { body: form });
    expect(created.status).toBe(200);
    expect(created.json).toEqual({
      name: 'api-one',
      fops: 'imageView2/2/w/32',
      pipeline: '0.default',
      notifyURL: '',
      ctime: expect.any(Number),
      mtime: expect.any(Number),
      created: true,
    });
    const json = JSON.stringify({ fops: 'imageInfo;imageAve', notifyURL: 'http://app.example/n' });
    const replaced = await api('POST', '/workflowTemplates/api-one', { body: json, contentType: 'application/json' });
    expect(replaced.json).toMatchObject({ fops: 'imageInfo;imageAve', pipeline: '', notifyURL: 'http://app.example/n', created: false });
    expect((await api('POST', '/workflowTemplates/api-two', { body: 'fops=exif' })).status).toBe(200);
    // QBox credentials work too.
    const qbox = await readAnswer(await signedFetch(s, { method: 'GET', path: '/workflowTemplates', scheme: 'QBox' }));
    expect((qbox.json as Array<{ name: string }>).map((t) => t.name)).toEqual(['api-one', 'api-two']);

    // alice sees none of root's, and root's names are unknown to her.
    expect((await api('GET', '/workflowTemplates', { mac: alice })).json).toEqual([]);
    expectError(await api('GET', '/workflowTemplates/api-one', { mac: alice }), 612);
    expectError(await api('DELETE', '/workflowTemplates/api-one', { mac: alice }), 612);
    expect((await api('POST', '/workflowTemplates/api-one', { body: 'fops=imageAve', mac: alice })).json).toMatchObject({ created: true });
    expect((await api('GET', '/workflowTemplates/api-one')).json).toMatchObject({ fops: 'imageInfo;imageAve' });

    const deleted = await api('DELETE', '/workflowTemplates/api-two');
    expect([deleted.status, deleted.json]).toEqual([200, {}]);
    expectError(await api('DELETE', '/workflowTemplates/api-two'), 612);
    expect(((await api('GET', '/workflowTemplates')).json as Array<{ name: string }>).map((t) => t.name)).toEqual(['api-one']);
    expect((await api('DELETE', '/workflowTemplates/api-one', { mac: alice })).status).toBe(200);
  });

  it('answers bad input with clear errors', async () => {
    expectError(await api('POST', '/workflowTemplates/.x', { body: 'fops=imageInfo' }), 400, /workflow template name/);
    expectError(await api('POST', '/workflowTemplates/x', { body: 'fops=' }), 400, /fops/);
    expectError(await api('POST', '/workflowTemplates/x', { body: 'fops=noSuchCmd%2F1' }), 400, /noSuchCmd/);
    expectError(await api('POST', '/workflowTemplates/x', { body: 'fops=imageInfo&pipeline=nowhere' }), 400, /nowhere/);
    expectError(await api('POST', '/workflowTemplates/x', { body: 'fops=imageInfo&notifyURL=ftp%3A%2F%2Fx' }), 400, /notifyURL/);
    expectError(await api('POST', '/workflowTemplates/x', { body: '{"fops":', contentType: 'application/json' }), 400, /JSON/);
    expectError(await api('POST', '/workflowTemplates/x', { body: '{"fops":7}', contentType: 'application/json' }), 400, /fops/);
    expectError(await readAnswer(await fetch(`${s.url}/workflowTemplates`)), 401);
    expectError(await readAnswer(await fetch(`${s.url}/workflowTemplates/x`, { method: 'POST', body: 'fops=imageInfo' })), 401);
    expect(((await api('GET', '/workflowTemplates')).json as Array<{ name: string }>).map((t) => t.name)).not.toContain('x');
  });
});

describe('running a template', () => {
  beforeAll(async () => {
    const fops = `imageView2/2/w/80;imageInfo;imageView2/1/w/20/h/20|${saveas(B, 'wf-square.jpg')}`;
    const form = `fops=${encodeURIComponent(fops)}&notifyURL=${encodeURIComponent(notify.url)}`;
    expect((await api('POST', '/workflowTemplates/thumbs', { body: form })).status).toBe(200);
    expect((await api('POST', '/workflowTemplates/info', { body: 'fops=imageInfo' })).status).toBe(200);
    expect((await api('POST', '/workflowTemplates/alices', { body: 'fops=imageAve', mac: alice })).status).toBe(200);
  });

  /** Checks a finished template job: code 0 and the three outputs of `thumbs` stored. */
  async function expectThumbsDone(id: string, key: string): Promise<void> {
    const final = await waitFinal(s, id);
    expect(final).toMatchObject({ code: 0, inputBucket: B, inputKey: key, taskFrom: 'workflow: thumbs', pipeline: '0.default' });
    expect(final.items.map((i) => i.cmd)).toEqual(['imageView2/2/w/80', 'imageInfo', `imageView2/1/w/20/h/20|${saveas(B, 'wf-square.jpg')}`]);
    expect(await sharp((await download(s, B, final.items[0]!.key)).body).metadata()).toMatchObject({ width: 80, height: 60 });
    expect(JSON.parse((await download(s, B, final.items[1]!.key)).body.toString())).toMatchObject({ width: 320, height: 240 });
    expect(final.items[2]!.key).toBe('wf-square.jpg');
    expect(await sharp((await download(s, B, 'wf-square.jpg')).body).metadata()).toMatchObject({ width: 20, height: 20 });
  }

  it('form upload with persistentWorkflowTemplateID: persistentId in the answer, the job runs, the notify URL hears of it', async () => {
    const r = await formPut({ scope: B, persistentWorkflowTemplateID: 'thumbs' }, 'form.jpg', await noiseJpeg(320, 240));
    expect(r.status).toBe(200);
    expect(r.data).toMatchObject({ key: 'form.jpg', persistentId: expect.stringMatching(/^z0\.[0-9a-f]{24}$/) });
    const note = await notify.next();
    note.answer(200);
    await expectThumbsDone(r.data.persistentId!, 'form.jpg');
    expect(JSON.parse(note.body)).toMatchObject({ id: r.data.persistentId, code: 0, taskFrom: 'workflow: thumbs' });
  });

  it.each(['v1', 'v2'] as const)('resumable %s upload with persistentWorkflowTemplateID runs it too', async (version) => {
    const path = join(dir, `${version}.jpg`);
    await writeFile(path, await noiseJpeg(320, 240));
    const key = `resumable-${version}.jpg`;
    const token = s.uploadToken({ scope: `${B}:${key}`, persistentWorkflowTemplateID: 'thumbs', returnBody: '{"id":$(persistentId),"key":$(key)}' });
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, version);
    const r = await sdk<{ id: string; key: string }>(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, extra));
    expect(r.status).toBe(200);
    expect(r.data.key).toBe(key);
    const note = await notify.next();
    note.answer(200);
    await expectThumbsDone(r.data.id, key);
  });

  it('persistentPipeline and persistentNotifyUrl of the policy win over the template', async () => {
    expect((await api('POST', '/pipelines/wf-pipe?concurrency=1')).status).toBe(200);
    const r = await formPut({ scope: B, persistentWorkflowTemplateID: 'info', persistentPipeline: 'wf-pipe', persistentType: 1 }, 'pipe.jpg', await noiseJpeg(64, 48));
    expect(r.status).toBe(200);
    expect(await waitFinal(s, r.data.persistentId!)).toMatchObject({ code: 0, pipeline: 'wf-pipe', type: 1, taskFrom: 'workflow: info' });
  });

  it("pfop with workflowTemplateID (the SDK's OperationManager) answers a persistentId; prefop shows the template's commands", async () => {
    expect((await formPut({ scope: B }, 'src.jpg', await noiseJpeg(320, 240))).status).toBe(200);
    const r = await pfopTemplate(s.mac, B, 'src.jpg', 'thumbs');
    expect(r.status).toBe(200);
    expect(r.data.persistentId).toMatch(/^z0\./);
    const note = await notify.next();
    note.answer(200);
    await expectThumbsDone(r.data.persistentId!, 'src.jpg');

    const piped = await pfopTemplate(s.mac, B, 'src.jpg', 'info', 'wf-pipe');
    expect(await waitFinal(s, piped.data.persistentId!)).toMatchObject({ code: 0, pipeline: 'wf-pipe', items: [{ cmd: 'imageInfo', code: 0 }] });
  });

  it('pfop: an unknown template → 400, fops with a template → 400, neither → 400; no job queued', async () => {
    const before = jobCount();
    expect(await pfopTemplate(s.mac, B, 'src.jpg', 'nope')).toMatchObject({ status: 400, data: { error: expect.stringMatching(/no such workflow template: nope/) } });
    const both = await readAnswer(
      await signedFetch(s, { path: '/pfop/', scheme: 'QBox', body: `bucket=${B}&key=src.jpg&fops=imageInfo&workflowTemplateID=info` }),
    );
    expectError(both, 400, /exclude/);
    expectError(await readAnswer(await signedFetch(s, { path: '/pfop/', scheme: 'QBox', body: `bucket=${B}&key=src.jpg` })), 400, /fops/);
    expect(jobCount()).toBe(before);
  });

  it('an unknown template, or one with persistentOps, refuses the upload with 400: no object, no job', async () => {
    const before = jobCount();
    const photo = await noiseJpeg(64, 48);
    const unknown = await formPut({ scope: B, persistentWorkflowTemplateID: 'nope' }, 'refused.jpg', photo);
    expect(unknown).toMatchObject({ status: 400, data: { error: expect.stringMatching(/no such workflow template: nope/) } });
    const both = await formPut({ scope: B, persistentWorkflowTemplateID: 'info', persistentOps: 'imageInfo' }, 'refused-both.jpg', photo);
    expect(both.status).toBe(400);
    const path = join(dir, 'refused.jpg');
    await writeFile(path, photo);
    const token = s.uploadToken({ scope: `${B}:refused-v2.jpg`, persistentWorkflowTemplateID: 'nope' });
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, 'v2');
    const v2 = await sdk<{ error: string }>(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, 'refused-v2.jpg', path, extra));
    expect(v2.status).toBe(400);
    for (const key of ['refused.jpg', 'refused-both.jpg', 'refused-v2.jpg']) expect((await download(s, B, key)).status, key).toBe(404);
    expect(jobCount()).toBe(before);
  });

  it("an account uses only its own templates: another account's (root's or alice's) is unknown (400)", async () => {
    const photo = await noiseJpeg(64, 48);
    // alice names root's template: refused, nothing stored in her bucket.
    const theirs = await formPut({ scope: ALICE_B, persistentWorkflowTemplateID: 'thumbs' }, 'a.jpg', photo, alice);
    expect(theirs).toMatchObject({ status: 400, data: { error: expect.stringMatching(/no such workflow template/) } });
    expect((await download(s, ALICE_B, 'a.jpg')).status).toBe(404);
    expect((await pfopTemplate(alice, B, 'src.jpg', 'thumbs')).status).toBe(400);
    expect((await formPut({ scope: ALICE_B }, 'own.jpg', photo, alice)).status).toBe(200);
    expect((await pfopTemplate(alice, ALICE_B, 'own.jpg', 'thumbs')).status).toBe(400);
    // root names alice's template: unknown in root's namespace.
    expect((await formPut({ scope: B, persistentWorkflowTemplateID: 'alices' }, 'r.jpg', photo)).status).toBe(400);
    expect((await pfopTemplate(s.mac, ALICE_B, 'own.jpg', 'alices')).status).toBe(400);
    // alice's own template runs on her bucket.
    const mine = await formPut({ scope: ALICE_B, persistentWorkflowTemplateID: 'alices' }, 'mine.jpg', photo, alice);
    expect(mine.status).toBe(200);
    expect(await waitFinal(s, mine.data.persistentId!)).toMatchObject({ code: 0, taskFrom: 'workflow: alices', items: [{ cmd: 'imageAve', code: 0 }] });
  });
});
