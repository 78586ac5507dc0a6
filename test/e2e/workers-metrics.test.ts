/**
 * `/metrics` with workers (GRANARY_WORKERS=2; src/metrics/cluster-*.ts, docs/operations/metrics-and-workers.md): uploads
 * spread over both workers are read whole by every scrape, whichever worker answers it, several scrapes in a row;
 * gauges read from the shared metadata are not doubled; the console's request totals come from the same sums.
 *
 * Which worker answered is told apart by the X-Reqid prefix (random per process and listener, server.ts
 * `reqIdGenerator`); which worker an upload goes to, by `/health/live` on the same keep-alive connection.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics, total, type Sample } from '../helpers/metrics.js';
import { AK, SK, sdk, staticZoneConfig } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { multipart, uploadParts, waitUntil } from '../helpers/upload.js';

const B = 'metered';
const N = 24;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request over `agent` (a fresh connection when undefined). */
function send(url: string, agent: http.Agent | undefined, method = 'GET', headers: http.OutgoingHttpHeaders = {}, body?: Buffer | string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer to ${method} ${url}`)));
    req.end(body);
  });
}

/** The process part of an X-Reqid (server.ts reqIdGenerator: 8 characters of random prefix, then a counter). */
const processOf = (a: Answer): string => String(a.headers['x-reqid']).slice(0, 8);

describe('/metrics across workers (GRANARY_WORKERS=2)', () => {
  let dataDir = '';
  let server: ChildServer;
  let consoleUrl = '';
  const agents: http.Agent[] = [];
  const mac = new qiniu.auth.digest.Mac(AK, SK);

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-workers-metrics-'));
    const [port, consolePort] = [await freePort(), await freePort()];
    server = await spawnServer(
      { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_WORKERS: '2', GRANARY_CONSOLE_PORT: String(consolePort) },
      port,
    );
    consoleUrl = `http://127.0.0.1:${consolePort}`;
    const bm = new qiniu.rs.BucketManager(mac, staticZoneConfig(`127.0.0.1:${port}`));
    expect((await sdk(bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    for (const a of agents) a.destroy();
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A keep-alive connection to each worker of the API port, by slot. */
  async function apiConnections(): Promise<http.Agent[]> {
    const bySlot = new Map<number, http.Agent>();
    await waitUntil(
      async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const live = JSON.parse((await send(`${server.url}/health/live`, agent)).body) as { worker: number };
        if (!bySlot.has(live.worker)) bySlot.set(live.worker, agent);
        return bySlot.size === 2;
      },
      'connections reach both workers',
      30_000,
    );
    return [...bySlot.entries()].sort(([a], [b]) => a - b).map(([, agent]) => agent);
  }

  /** A keep-alive connection to each worker of the console port (told apart by their X-Reqid prefixes). */
  async function consoleConnections(): Promise<http.Agent[]> {
    const byProcess = new Map<string, http.Agent>();
    await waitUntil(
      async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const who = processOf(await send(`${consoleUrl}/api/session`, agent));
        if (!byProcess.has(who)) byProcess.set(who, agent);
        return byProcess.size === 2;
      },
      'console connections reach both workers',
      30_000,
    );
    return [...byProcess.values()];
  }

  async function scrape(agent?: http.Agent): Promise<{ who: string; samples: Sample[] }> {
    const res = await send(`${consoleUrl}/metrics`, agent);
    expect(res.status, res.body).toBe(200);
    return { who: processOf(res), samples: parseMetrics(res.body) };
  }

  it('N uploads spread over both workers: every scrape, on either worker, reads N', async () => {
    const workers = await apiConnections();
    for (let i = 0; i < N; i++) {
      const key = `k${i}`;
      const token = new qiniu.rs.PutPolicy({ scope: `${B}:${key}` } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
      const { body, contentType } = multipart(uploadParts(token, key, Buffer.from(`object ${i}`)));
      const up = await send(`${server.url}/`, workers[i % 2], 'POST', { 'content-type': contentType, 'content-length': body.length }, body);
      expect(up.status, up.body).toBe(200);
    }
    // Fresh connections (handed to the workers in turn) and kept ones, one per worker: both answer, all agree.
    const seen = new Set<string>();
    const consoles = await consoleConnections();
    for (let i = 0; i < 8; i++) {
      const { who, samples } = await scrape(i < 4 ? undefined : consoles[i % 2]);
      seen.add(who);
      expect(total(samples, 'granary_uploads_total', { kind: 'form' }), `scrape ${i} on ${who}`).toBe(N);
      expect(total(samples, 'granary_upload_bytes_total', { kind: 'form' })).toBe(Array.from({ length: N }, (_, k) => `object ${k}`.length).reduce((a, b) => a + b));
      // Read from the shared metadata: the same in both workers, taken once (not doubled).
      expect(total(samples, 'granary_bucket_objects', { bucket: B })).toBe(N);
      expect(total(samples, 'granary_http_requests_total', { role: 'up', operation: 'up.form', status: '200' })).toBe(N);
      // One series per name: the workers' samples are summed, never listed side by side.
      const forms = samples.filter((x) => x.name === 'granary_uploads_total' && x.labels.kind === 'form');
      expect(forms).toHaveLength(1);
    }
    expect(seen.size).toBe(2);
  }, 120_000);

  it("the console's request totals on either worker are the totals of both", async () => {
    const signedIn: Array<{ agent: http.Agent; cookie: string }> = [];
    for (const agent of await consoleConnections()) {
      const signIn = await send(`${consoleUrl}/api/session`, agent, 'POST', { 'content-type': 'application/json' }, JSON.stringify({ accessKey: AK, secretKey: SK }));
      expect(signIn.status, signIn.body).toBe(200);
      signedIn.push({ agent, cookie: String(signIn.headers['set-cookie']?.[0] ?? '').split(';')[0] ?? '' });
    }
    // A scrape on one worker, then the Overview on the other: nothing else is requested in between, so the
    // Overview's total is the scrape's plus the scrape itself (counted once answered).
    for (const [a, b] of [[0, 1], [1, 0]] as const) {
      const requests = total((await scrape(signedIn[a]?.agent)).samples, 'granary_http_requests_total');
      const overview = await send(`${consoleUrl}/api/overview`, signedIn[b]?.agent, 'GET', { cookie: signedIn[b]?.cookie ?? '' });
      expect(overview.status, overview.body).toBe(200);
      const body = JSON.parse(overview.body) as { requests: { total: { requests: number } } };
      expect(body.requests.total.requests).toBe(requests + 1);
    }
  }, 60_000);
});
