/**
 * IAM changes across worker processes (GRANARY_WORKERS=2; auth/key-index.ts, the `iam` change counter): a sub-user
 * key pair created through one worker is accepted by the other at once (the index looks at the counter once for a
 * key it does not know), and a key pair disabled through one worker is refused by the other at its next look at the counter
 * (every 250 ms: docs/reference/iam.md, "refused on every door, every worker, every cluster node within a second"). Which worker answers is told by
 * `/health/live` on a kept-alive connection (as test/e2e/workers-metrics.test.ts does).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qiniuDate } from '../helpers/http.js';
import { AK, SK } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { waitUntil } from '../helpers/upload.js';

const B = 'iam-workers';

interface Answer {
  status: number;
  body: string;
}

/** One signed management request (`Qiniu` token) over `agent`. */
function call(url: string, agent: http.Agent, mac: qiniu.auth.digest.Mac, method: string, path: string, json?: unknown): Promise<Answer> {
  const body = json === undefined ? undefined : JSON.stringify(json);
  const contentType = body === undefined ? 'application/x-www-form-urlencoded' : 'application/json';
  const date = qiniuDate(new Date());
  const headers: Record<string, string> = { 'Content-Type': contentType, 'X-Qiniu-Date': date };
  headers.Authorization = qiniu.util.generateAccessTokenV2(mac, `${url}${path}`, method, contentType, body, { 'X-Qiniu-Date': date });
  // Node sends a DELETE's body unframed unless told its length.
  headers['Content-Length'] = String(Buffer.byteLength(body ?? ''));
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('IAM across worker processes (GRANARY_WORKERS=2)', () => {
  let dataDir = '';
  let server: ChildServer;
  const agents: http.Agent[] = [];
  const root = new qiniu.auth.digest.Mac(AK, SK);

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-iam-workers-'));
    server = await spawnServer({ GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_WORKERS: '2' }, await freePort());
  }, 90_000);

  afterAll(async () => {
    for (const a of agents) a.destroy();
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A keep-alive connection to each worker, by slot. */
  async function workers(): Promise<[http.Agent, http.Agent]> {
    const bySlot = new Map<number, http.Agent>();
    await waitUntil(
      async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const res = await new Promise<string>((resolve, reject) =>
          http.get(`${server.url}/health/live`, { agent }, (r) => {
            let t = '';
            r.on('data', (c: Buffer) => (t += c.toString()));
            r.on('end', () => resolve(t));
          }).on('error', reject),
        );
        const slot = (JSON.parse(res) as { worker: number }).worker;
        if (!bySlot.has(slot)) bySlot.set(slot, agent);
        return bySlot.size === 2;
      },
      'connections reach both workers',
      30_000,
    );
    const [a, b] = [...bySlot.entries()].sort(([x], [y]) => x - y).map(([, agent]) => agent);
    return [a!, b!];
  }

  it('a key pair made through one worker works at once on the other; disabled there, refused by the other within a second', async () => {
    const [one, two] = await workers();
    const ok = async (p: Promise<Answer>): Promise<Answer> => {
      const a = await p;
      expect(a.status, a.body).toBe(200);
      return a;
    };
    await ok(call(server.url, one, root, 'POST', `/mkbucketv3/${B}/region/z0`));
    await ok(call(server.url, one, root, 'POST', '/iam/v1/policies', { alias: 'lister', description: '', edit_type: 1, statement: [{ action: ['kodo/List'], resource: [`qrn:kodo:::${B}`], effect: 'Allow' }] }));
    await ok(call(server.url, one, root, 'POST', '/iam/v1/users', { alias: 'w-user', password: 'correct-horse' }));
    await ok(call(server.url, one, root, 'POST', '/iam/v1/users/w-user/policies', { policy_aliases: ['lister'] }));
    const key = (JSON.parse((await ok(call(server.url, one, root, 'POST', '/iam/v1/users/w-user/keypairs'))).body) as { data: { access_key: string; secret_key: string } }).data;
    const sub = new qiniu.auth.digest.Mac(key.access_key, key.secret_key);
    const list = (agent: http.Agent): Promise<Answer> => call(server.url, agent, sub, 'POST', `/list?bucket=${B}`);

    // Created through worker one, used at once through worker two: an upload token signed by it (a chunk: no
    // object yet, the account's bucket suffices), then a management call — accepted, with its policy.
    const token = new qiniu.rs.PutPolicy({ scope: B }).uploadToken(sub);
    const chunk = await new Promise<Answer>((resolve, reject) => {
      const req = http.request(`${server.url}/mkblk/4`, { method: 'POST', agent: two, headers: { Authorization: `UpToken ${token}`, 'Content-Type': 'application/octet-stream', 'Content-Length': '4' } }, (res) => {
        let t = '';
        res.on('data', (c: Buffer) => (t += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: t }));
      });
      req.on('error', reject);
      req.end('abcd');
    });
    expect(chunk.status, chunk.body).toBe(200);
    await ok(list(two));
    expect((await call(server.url, two, sub, 'POST', `/drop/${B}`)).status).toBe(403);

    // Disabled through worker one: refused there at once, and by worker two at its next look at the change counter
    // (every 250 ms; the bound itself is the unit test's, test/unit/key-index-iam.test.ts, on a fake clock: no
    // timing assertion on a shared machine here).
    await ok(call(server.url, one, root, 'POST', `/iam/v1/users/w-user/keypairs/${key.access_key}/disable`));
    expect((await list(one)).status).toBe(401);
    await waitUntil(async () => (await list(two)).status === 401, 'worker two refuses the disabled key', 30_000);

    // The policy removed through worker one: worker two refuses the (enabled again) key within a second too.
    await ok(call(server.url, one, root, 'POST', `/iam/v1/users/w-user/keypairs/${key.access_key}/enable`));
    await ok(list(two));
    await ok(call(server.url, one, root, 'DELETE', '/iam/v1/users/w-user/policies', { policy_aliases: ['lister'] }));
    await waitUntil(async () => (await list(two)).status === 403, 'worker two refuses the key without its policy', 30_000);
  }, 60_000);
});
