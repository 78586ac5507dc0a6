/**
 * Fuzzing the upload routes (docs/development/kodo-protocol.md §4–§6, §14) against a real `granary serve` subprocess: about 3000
 * requests from fixed seeds — valid form, v1 and v2 uploads, then the same mutated (bytes flipped, inserted,
 * deleted anywhere; bodies cut short; duplicate, huge and missing fields; broken boundaries, Content-Types, ctxs,
 * part lists, part numbers, Content-MD5s; sizes over the limits) and clients that vanish mid-body.
 *
 * Oracle for every answer: JSON body, a string `error` when not 200, never 5xx nor a status Kodo does not use,
 * 200 only where the input stayed valid (with the CRC-32 / MD5 / hash of what was really sent). After each phase:
 * the process still runs and answers, the object under KEEP_KEY is byte-identical (every upload token is
 * `insertOnly` or scoped to other keys), the staging directory is empty, nothing uncaught was logged. At the end
 * every object a 200 created downloads with the bytes (or etag) it was answered with.
 *
 * The server is bin/granary.js (dist/, rebuilt by test/global-setup.ts when older than src/, so the fuzzer runs
 * against the code under test); its log goes to the file FUZZ_LOG names, when set (for debugging).
 */
import { watch } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, sdkFor, ServeProcess } from '../helpers/cli.js';
import { qetag } from '../helpers/etag.js';
import { seededBytes } from '../helpers/files.js';
import { formSegments, joinSegments, judgeAnswer, Rng, runPool, send, Tally, type Outcome, type Target } from '../helpers/fuzz.js';
import { formCases, formDisconnectCases } from '../helpers/fuzz-form.js';
import { MiB, type Case, type Fuzzer, type UploadFuzzEnv } from '../helpers/fuzz-upload.js';
import { v1Cases, v1DisconnectCases } from '../helpers/fuzz-v1.js';
import { v2Cases, v2DisconnectCases } from '../helpers/fuzz-v2.js';
import { upToken } from '../helpers/resumable.js';
import { AK, SK, sdk } from '../helpers/server.js';

const SEED = 0x6a7a11;
const BUCKET = 'fuzz';
const KEEP_KEY = 'fuzz/keep.bin';
const KEEP = seededBytes('fuzz-keep', 10000);
const MAX_OBJECT = 8 * MiB;
/** Requests in flight at once. */
const WIDTH = 6;
/** A request unanswered this long is a hang. */
const TIMEOUT_MS = 10_000;

let server: ServeProcess;
let dataDir = '';
let target: Target;
const agent = new http.Agent({ keepAlive: true, maxSockets: WIDTH });
const tally = new Tally();
/** Problems found so far; `reported` of them were already asserted on by a checkpoint. */
const problems: string[] = [];
let reported = 0;
const created = new Map<string, { hash: string; content?: Buffer }>();
const started = Date.now();

const deadline = (): number => Math.floor(Date.now() / 1000) + 3600;
const env: UploadFuzzEnv = {
  bucket: BUCKET,
  keepKey: KEEP_KEY,
  keepBytes: KEEP,
  token: upToken({ scope: BUCKET, insertOnly: 1, deadline: deadline() }),
  scopedToken: (key) => upToken({ scope: `${BUCKET}:${key}`, deadline: deadline() }),
  otherBucketToken: upToken({ scope: 'fuzz-other', deadline: deadline() }),
  maxObjectBytes: MAX_OBJECT,
};

const alive = (): boolean => server.child.exitCode === null && server.child.signalCode === null;

/** The fuzzer a case gets: its own Rng, a send that judges and counts, a record of created objects. */
function fuzzerFor(rng: Rng): Fuzzer {
  return {
    env,
    rng,
    async send(route, w, e) {
      if (!alive()) {
        problems.push(`${route}: ${e.what}: the server process is gone`);
        return undefined;
      }
      const o = await send(target, w, TIMEOUT_MS);
      const answer = o.kind === 'answer' ? o : o.kind === 'cut' ? o.answer : undefined;
      tally.add(route, o.kind === 'answer' ? String(o.status) : o.kind);
      if (o.kind === 'timeout') problems.push(`${route}: ${e.what}: no answer within ${TIMEOUT_MS} ms (hang)`);
      if (o.kind === 'error') problems.push(`${route}: ${e.what}: ${o.message}`);
      if (!answer) return undefined;
      const found = judgeAnswer(answer, e).map((p) => `${route}: ${p}`);
      problems.push(...found);
      if (answer.status !== 200 || found.length > 0 || o.kind === 'cut') return undefined;
      return answer.text === '' ? {} : (JSON.parse(answer.text) as Record<string, unknown>);
    },
    created(key, hash, content) {
      const before = created.get(key);
      if (before && before.hash !== hash) problems.push(`${key} was created twice with different hashes`);
      created.set(key, { hash, ...(content ? { content } : {}) });
    },
  };
}

/** `GET /<bucket>/<key>` (path style, raw target). */
function download(key: string): Promise<Outcome> {
  return send(target, { method: 'GET', path: `/${BUCKET}/${encodeURIComponent(key)}` }, TIMEOUT_MS);
}

/** The files of `dir` once it is empty, or what is left after `timeoutMs` (waits on file-system events). */
function whenEmpty(dir: string, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve) => {
    let done = false;
    const watcher = watch(dir);
    const finish = (files: string[]): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      watcher.close();
      resolve(files);
    };
    const check = async (): Promise<void> => {
      const files = await readdir(dir);
      if (files.length === 0) finish(files);
    };
    const timer = setTimeout(() => void readdir(dir).then(finish), timeoutMs);
    watcher.on('change', () => void check());
    watcher.on('error', () => void readdir(dir).then(finish));
    void check();
  });
}

/** How much of the server's stdout earlier checkpoints already read. */
let logRead = 0;

/** Lines the server logged at level error or fatal since the last call, and anything uncaught on stderr. */
function loggedFailures(): string[] {
  const fresh = server.stdout.slice(logRead);
  logRead = server.stdout.length;
  const errors = fresh.split('\n').filter((l) => /"level":(50|60)/.test(l));
  const stderr = /uncaught|unhandled/i.test(server.stderr) ? [`stderr: ${server.stderr.slice(0, 2000)}`] : [];
  return [...errors, ...stderr];
}

/** After a phase: the process runs and answers, the kept object is intact, staging is empty, nothing went wrong. */
async function checkpoint(phase: string): Promise<void> {
  expect(alive(), `the server exited during ${phase}: ${server.stderr.slice(0, 2000)}`).toBe(true);
  const kept = await download(KEEP_KEY);
  expect(kept.kind === 'answer' && kept.status, `the server does not answer after ${phase}`).toBe(200);
  expect(kept.kind === 'answer' && kept.body.equals(KEEP), `${KEEP_KEY} changed during ${phase}`).toBe(true);
  const fresh = problems.slice(reported);
  reported = problems.length;
  const logged = loggedFailures();
  expect(fresh.slice(0, 40), `${fresh.length} problems in ${phase}`).toEqual([]);
  expect(logged.slice(0, 10), `${logged.length} errors logged during ${phase}`).toEqual([]);
  expect(await whenEmpty(join(dataDir, 'tmp'), 5000), `staged bytes left after ${phase}`).toEqual([]);
}

/** Runs the cases of a phase, each with its own seeded Rng, WIDTH at a time; then the checkpoint. */
async function phase(name: string, cases: Case[]): Promise<void> {
  await runPool(cases, WIDTH, (c, i) => c(fuzzerFor(Rng.derive(SEED, `${name}:${i}`))));
  await checkpoint(name);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'granary-fuzz-'));
  const port = await freePort();
  const serveEnv = { GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_MAX_OBJECT_SIZE: String(MAX_OBJECT), GRANARY_MIN_FREE_BYTES: '0' };
  server = new ServeProcess(dataDir, port, { env: serveEnv });
  await server.ready();
  target = { port, agent };
  const { bucketManager } = sdkFor(server.host, AK, SK);
  expect((await sdk(bucketManager.createBucket(BUCKET, { regionId: 'z0' }))).status).toBe(200);
  // The kept object, put by raw form upload with a token that may only create it.
  const boundary = 'fuzz-keep-boundary';
  const body = joinSegments(
    formSegments(
      [
        { name: 'token', value: upToken({ scope: `${BUCKET}:${KEEP_KEY}`, insertOnly: 1, deadline: deadline() }) },
        { name: 'key', value: KEEP_KEY },
        { name: 'file', value: KEEP, filename: 'keep.bin', contentType: 'application/octet-stream' },
        { name: 'crc32', value: String(crc32(KEEP)) },
      ],
      boundary,
    ),
  );
  const put = await send(target, { method: 'POST', path: '/', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body }, TIMEOUT_MS);
  expect(put.kind === 'answer' && put.text).toBe(JSON.stringify({ hash: qetag(KEEP), key: KEEP_KEY }));
});

afterAll(async () => {
  console.log(`fuzz-upload: ${tally.total()} requests in ${((Date.now() - started) / 1000).toFixed(1)} s, seed ${SEED}\n${tally.summary()}`);
  agent.destroy();
  if (process.env.FUZZ_LOG) await writeFile(process.env.FUZZ_LOG, server.stdout + server.stderr);
  if (server && alive()) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('fuzzing the upload routes', () => {
  it('form upload: valid requests in both field orders, mutations, truncations, duplicates, huge fields', async () => {
    await phase('form', formCases());
  });

  it('resumable v1: mkblk, bput, mkfile with altered sizes, ctxs, offsets, bodies and ctx lists', async () => {
    await phase('v1', v1Cases());
  });

  it('resumable v2: initiate, part, complete, list, abort with altered ids, numbers, MD5s and part lists', async () => {
    await phase('v2', v2Cases());
  });

  it('clients that vanish mid-body on every route', async () => {
    await phase('gone', [...formDisconnectCases(), ...v1DisconnectCases(), ...v2DisconnectCases()]);
  });

  it('every object a 200 created downloads with the bytes it was answered with', async () => {
    const wrong: string[] = [];
    await runPool([...created], WIDTH, async ([key, { hash, content }]) => {
      if (key === '') return;
      const d = await download(key);
      if (d.kind !== 'answer' || d.status !== 200) {
        wrong.push(`${key}: ${d.kind === 'answer' ? d.status : d.kind}`);
        return;
      }
      if (content ? !d.body.equals(content) : /^[Fl]/.test(hash) && qetag(d.body) !== hash) wrong.push(`${key}: bytes differ from ${hash}`);
    });
    expect(wrong.slice(0, 40), `${wrong.length} created objects are wrong`).toEqual([]);
    await checkpoint('downloads');
  });
});
