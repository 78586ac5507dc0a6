/**
 * Bench of IAM enforcement (docs/reference/iam.md, "Enforcement"; the aim: a sub-user's key ≥ 0.95× the root
 * key's): form upload (qiniu SDK, 4 KiB) and GET 4 KiB through a private download URL, signed by the root key and by
 * a sub-user's key (created through the IAM API, policy `kodo/Upload` + `kodo/Get` on the bucket), in the same run
 * against the same server. Each case: a warm-up untimed, then 3 rounds (1 with `--quick`) alternating which key goes
 * first; the figure is each key's median round in ops/s, and the ratio sub-user / root. 16 requests in flight.
 *
 * Standalone: `npx tsx bench/iam.ts [--quick]` prints the table and the figures as JSON.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import { transpileForBench } from './lib/build.js';
import { startServer } from './lib/child.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { fmt, table } from './lib/table.js';
import { median, timedPool } from './lib/stats.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 'iam-bench';
const SIZE = 4096;



/** A management call signed by `mac` (Qiniu token); the parsed JSON answer. 200 expected. */
async function manage(base: string, mac: qiniu.auth.digest.Mac, method: string, path: string, json?: unknown): Promise<unknown> {
  const body = json === undefined ? undefined : JSON.stringify(json);
  const contentType = body === undefined ? 'application/x-www-form-urlencoded' : 'application/json';
  const headers = { 'Content-Type': contentType, Authorization: qiniu.util.generateAccessTokenV2(mac, `${base}${path}`, method, contentType, body) };
  const res = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const rounds = opts.quick ? 1 : 3;
  const count = opts.quick ? 400 : 2000;
  const concurrency = 16;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-iam-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-iam-data-'));
  try {
    await transpileForBench(root, buildDir);
    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }));
    try {
      const host = `127.0.0.1:${server.port}`;
      const base = `http://${host}`;
      const rootMac = new qiniu.auth.digest.Mac(AK, SK);
      await manage(base, rootMac, 'POST', `/private?bucket=${BUCKET}&private=1`);
      const statement = [{ action: ['kodo/Upload', 'kodo/Get'], resource: [`qrn:kodo:::${BUCKET}/*`], effect: 'Allow' }];
      await manage(base, rootMac, 'POST', '/iam/v1/policies', { alias: 'bench', description: '', edit_type: 1, statement });
      await manage(base, rootMac, 'POST', '/iam/v1/users', { alias: 'bench-user', password: 'correct-horse' });
      await manage(base, rootMac, 'POST', '/iam/v1/users/bench-user/policies', { policy_aliases: ['bench'] });
      const pair = ((await manage(base, rootMac, 'POST', '/iam/v1/users/bench-user/keypairs')) as { data: { access_key: string; secret_key: string } }).data;
      const keys = [
        { name: 'root key', mac: rootMac },
        { name: 'sub-user key', mac: new qiniu.auth.digest.Mac(pair.access_key, pair.secret_key) },
      ];
      const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
      const form = new qiniu.form_up.FormUploader(new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions));
      const body = randomBytes(SIZE);
      const deadline = Math.floor(Date.now() / 1000) + 86_400;
      const put = async (mac: qiniu.auth.digest.Mac, key: string): Promise<void> => {
        const token = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${key}`, expires: 86_400 }).uploadToken(mac);
        const r = await form.put(token, key, body, new qiniu.form_up.PutExtra());
        if (!r.ok()) throw new Error(`form upload of ${key}: ${r.resp.statusCode} ${JSON.stringify(r.data)}`);
      };
      const get = async (mac: qiniu.auth.digest.Mac, key: string): Promise<void> => {
        const url = new qiniu.rs.BucketManager(mac).privateDownloadUrl(`${base}/${BUCKET}`, key, deadline);
        const res = await fetch(url);
        const n = (await res.arrayBuffer()).byteLength;
        if (res.status !== 200 || n !== SIZE) throw new Error(`GET ${key}: ${res.status}, ${n} bytes`);
      };
      const figures: Record<string, unknown> = {};
      const rows: string[][] = [];
      // Warm-up, untimed.
      for (const k of keys) {
        await timedPool(200, concurrency, (i) => put(k.mac, `warm/${k.name}/${i}`));
        await timedPool(200, concurrency, (i) => get(k.mac, `warm/${k.name}/${i}`));
      }
      for (const op of ['form upload', 'GET'] as const) {
        const got: number[][] = keys.map(() => []);
        for (let round = 0; round < rounds; round++) {
          for (let j = 0; j < keys.length; j++) {
            const ki = (j + round) % keys.length;
            const k = keys[ki]!;
            const seconds = await timedPool(count, concurrency, (i) => (op === 'GET' ? get(k.mac, `${k.name}/${i}`) : put(k.mac, `${k.name}/${i}`)));
            got[ki]!.push(count / seconds);
            log(`round ${round + 1} ${k.name}: ${op} ${count} × 4 KiB, ${concurrency} in flight: ${fmt(count / seconds, 1)} ops/s`);
          }
        }
        const [r = 0, u = 0] = got.map(median);
        keys.forEach((k, ki) => {
          figures[`${op} 4 KiB ${k.name} ops/s`] = median(got[ki]!);
          figures[`${op} 4 KiB ${k.name} ops/s rounds`] = got[ki]!.map((x) => Math.round(x * 10) / 10);
        });
        figures[`${op} 4 KiB sub-user / root`] = Math.round((u / r) * 1000) / 1000;
        rows.push([`${op} 4 KiB (${count}, ${concurrency} in flight)`, fmt(r, 1), fmt(u, 1), `${(u / r).toFixed(3)}×`]);
      }
      log(table(['case', 'root key ops/s', 'sub-user key ops/s', 'sub-user / root'], rows));
      return figures;
    } finally {
      await server.stop();
    }
  } finally {
    await Promise.all([buildDir, dataDir].map((d) => rm(d, { recursive: true, force: true })));
  }
}

await runIfMain(import.meta.url, run);
