/**
 * The bucket settings commands (`bucket max-age|referer|cors|protect`) run as subprocesses on the data dir of a
 * running server, which applies them to the next request. The CLI is bin/granary.js (dist/, built by
 * test/global-setup.ts when older than src/).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cleanEnv, REPO_ROOT } from '../helpers/cli.js';
import { rawRequest, upload, type RawResponse } from '../helpers/http.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const B = 'cli-settings';

let s: TestServer;
let dir: string;

/** Runs `granary <args> --data-dir <dir>` (root keys of the test server) to completion. */
function cli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const argv = [BIN, ...args, '--data-dir', dir, '--access-key', AK, '--secret-key', SK];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { cwd: REPO_ROOT, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ status: err ? (typeof code === 'number' ? code : null) : 0, stdout, stderr });
    });
  });
}
const get = (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawResponse> =>
  rawRequest({ port: s.running.port, method, path, headers });
const info = async (): Promise<Record<string, unknown>> => (await sdk<Record<string, unknown>>(s.bucketManager().getBucketInfo(B))).data;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-settings-cli-'));
  s = await startTestServer({ GRANARY_DATA_DIR: dir });
  await createBucket(s, B);
  await upload(s, B, 'a.txt', 'cli');
}, 120_000);
afterAll(async () => {
  await s.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('bucket settings commands', () => {
  it('max-age sets Cache-Control', async () => {
    expect(await cli('bucket', 'max-age', B, '90')).toMatchObject({ status: 0, stdout: `max-age of bucket ${B}: 90 s\n` });
    expect((await cli('bucket', 'max-age', 'no-such-bucket', '10')).stderr).toMatch(/no such bucket.*\(631\)/);
    expect((await get(`/${B}/a.txt`)).headers['cache-control']).toBe('public, max-age=90');
    expect((await info()).max_age).toBe(90);
  }, 120_000);

  it('referer sets white/black lists, --allow-empty and --source-enabled; off removes them', async () => {
    const set = await cli('bucket', 'referer', B, '--mode', 'white', '--pattern', 'example.com;*.example.com', '--source-enabled');
    expect(set.status, set.stderr).toBe(0);
    expect(set.stdout).toBe(
      `referer rules of bucket ${B}: white list example.com;*.example.com; empty Referer refused; checked on every address (path style, source, bound and CDN domains)\n`,
    );
    expect(await info()).toMatchObject({ anti_leech_mode: 1, refer_wl: ['example.com', '*.example.com'], no_refer: false, source_enabled: true });
    expect((await get(`/${B}/a.txt`, { Referer: 'https://evil.test/' })).status).toBe(403);
    expect((await get(`/${B}/a.txt`, { Referer: 'https://www.example.com/' })).status).toBe(200);
    expect((await get(`/${B}/a.txt`)).status).toBe(403);

    const black = await cli('bucket', 'referer', B, '--mode', 'black', '--pattern', 'evil.test', '--allow-empty');
    expect(black.stdout).toMatch(/black list evil\.test; empty Referer allowed; checked on CDN domains only/);
    expect(await info()).toMatchObject({ anti_leech_mode: 2, refer_bl: ['evil.test'], no_refer: true, source_enabled: false });

    expect(await cli('bucket', 'referer', B, '--mode', 'off')).toMatchObject({ status: 0, stdout: `referer rules of bucket ${B}: off\n` });
    expect((await info()).anti_leech_mode).toBe(0);
  }, 120_000);

  it('cors set <file> | get | clear', async () => {
    const file = join(dir, 'rules.json');
    const rules = [{ allowed_origin: ['https://app.example.com'], allowed_method: ['GET'], max_age: 60 }];
    await writeFile(file, JSON.stringify(rules));
    expect(await cli('bucket', 'cors', B, 'set', file)).toMatchObject({ status: 0, stdout: `CORS rules of bucket ${B}: 1 rule(s)\n` });
    expect(JSON.parse((await cli('bucket', 'cors', B, 'get')).stdout)).toEqual(rules);
    expect((await sdk(s.bucketManager().getCorsRules(B))).data).toEqual(rules);
    const ok = await get(`/${B}/a.txt`, { Origin: 'https://app.example.com' });
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example.com');
    expect((await get(`/${B}/a.txt`, { Origin: 'https://evil.test' })).headers['access-control-allow-origin']).toBeUndefined();

    expect(await cli('bucket', 'cors', B, 'clear')).toMatchObject({ status: 0, stdout: `CORS rules of bucket ${B} cleared (global * applies)\n` });
    expect((await get(`/${B}/a.txt`, { Origin: 'https://evil.test' })).headers['access-control-allow-origin']).toBe('*');
    expect((await sdk(s.bucketManager().getCorsRules(B))).data).toEqual([]);
  }, 120_000);

  it('protect on|off', async () => {
    expect(await cli('bucket', 'protect', B, 'on')).toMatchObject({ status: 0, stdout: `original protection on for bucket ${B}\n` });
    expect((await info()).protected).toBe(1);
    expect((await get(`/${B}/a.txt`)).status).toBe(403);
    expect(await cli('bucket', 'protect', B, 'off')).toMatchObject({ status: 0, stdout: `original protection off for bucket ${B}\n` });
    expect((await get(`/${B}/a.txt`)).status).toBe(200);
  }, 120_000);

  it('refuses bad input with exit status 1 and the reason, changing nothing', async () => {
    const badRules = join(dir, 'bad-rules.json');
    await writeFile(badRules, JSON.stringify([{ allowed_origin: ['*'], allowed_method: ['FETCH'] }]));
    const cases: [string[], RegExp][] = [
      [['bucket', 'max-age', B, 'soon'], /maxAge.*\(400\)/],
      [['bucket', 'referer', B, '--mode', 'grey'], /--mode must be white, black or off/],
      [['bucket', 'cors', B, 'set', badRules], /rules\[0\]\.allowed_method\[0\].*\(400\)/],
      [['bucket', 'protect', B, 'maybe'], /expected on or off/],
    ];
    // One after the other: side by side they only compete for the CPU.
    for (const [args, msg] of cases) {
      const r = await cli(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(msg);
    }
    expect(await info()).toMatchObject({ max_age: 90, anti_leech_mode: 0, protected: 0 });
  }, 120_000);
});
