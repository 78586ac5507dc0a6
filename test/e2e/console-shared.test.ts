/**
 * One console across processes: sessions and the sign-in throttle live in the MetaStore (src/console/sessions.ts),
 * so any worker or cluster node answers any console request.
 *
 * - `granary serve` with GRANARY_WORKERS=2 (a subprocess; the console port is shared the node:cluster way, each new
 *   connection to the next worker) and GRANARY_TRUST_PROXY=loopback (the test plays the reverse proxy): 20 session
 *   checks on fresh connections after a sign-in all answer 200, from both workers; Chromium signs in, then 8 screen
 *   loads (each a new browser context, so new connections) never show the sign-in form nor get a 401; failed
 *   sign-ins are counted once across the workers (10 → the 11th is refused with 573, not the 21st) per client
 *   address (X-Forwarded-For from the trusted proxy), so the same AccessKey still signs in from another address;
 *   over https (X-Forwarded-Proto from the trusted proxy) the cookie is `__Host-granary_console`, Secure.
 * - Two cluster nodes sharing one PostgreSQL (test/helpers/cluster.ts `startNode`; blobs on each node's disk, which
 *   the console's session calls do not touch): a session made on node A works on node B (API and Chromium — cookies
 *   ignore ports, so the browser sends A's cookie to B), 8 screen loads alternating A and B, 0 sign-outs; the
 *   throttle counts failures on both nodes once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { answeringProcess, ensureConsoleBuilt, freshCall } from '../helpers/console.js';
import { startNode, type ClusterNode } from '../helpers/cluster.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';
import { AK, SK } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { waitUntil } from '../helpers/upload.js';

const ROOT = { GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
/** Screens of the console (hash routes) and the API call that loads each one's data. */
const SCREENS: Array<[route: string, data: string]> = [
  ['#/', '/api/overview'],
  ['#/buckets', '/api/buckets'],
  ['#/processing', '/api/jobs'],
  ['#/keys', '/api/keys'],
];

let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/**
 * Waits until the console at `base` answers from `processes` different processes (each worker starts its console
 * listener after its API listener; until then the port's connections go to the workers already listening).
 */
async function consoleUp(base: string, processes = 1): Promise<void> {
  const seen = new Set<string>();
  await waitUntil(
    async () => {
      const a = await freshCall(base, 'GET', '/api/session').catch(() => undefined);
      if (a?.status === 200) seen.add(answeringProcess(a.headers));
      return seen.size >= processes;
    },
    `${base} answers from ${processes} process(es)`,
    60_000,
  );
}

/** The session cookie (`name=value`) from a sign-in answer. */
function cookieOf(headers: Record<string, string | string[] | undefined>): string {
  const set = headers['set-cookie'];
  const first = Array.isArray(set) ? set[0] : set;
  return first?.split(';')[0] ?? '';
}

/** What the screen loads saw. */
interface Loads {
  /** Loads that ended on the sign-in form. */
  signedOut: number;
  /** Console API answers with status 401, as `status path`. */
  refused: string[];
  /** The processes (X-Reqid prefixes) that answered `GET /api/session`. */
  processes: Set<string>;
}

/**
 * Signs in through the page at `loads[0]`, then opens each of `loads` (`[url, the API path of its data]`) in a new
 * browser context carrying the signed-in cookies (new contexts open new connections), four at a time, until the
 * screen's data has been answered or the sign-in form shows.
 */
async function signInThenLoad(loads: Array<[url: string, data: string]>): Promise<Loads> {
  const first = await browser.newContext({ locale: 'en-US' });
  const page = await first.newPage();
  await page.goto(loads[0]![0]);
  await page.fill('input[name=accessKey]', AK);
  await page.fill('input[name=secretKey]', SK);
  await page.click('button[type=submit]');
  await page.waitForSelector('header.topbar');
  const storageState = await first.storageState();
  await first.close();
  const seen: Loads = { signedOut: 0, refused: [], processes: new Set() };
  const loadOne = async ([url, data]: [string, string]): Promise<void> => {
    const context = await browser.newContext({ locale: 'en-US', storageState });
    try {
      const p = await context.newPage();
      p.on('response', (r) => {
        const path = new URL(r.url()).pathname;
        if (!path.startsWith('/api/')) return;
        if (r.status() === 401) seen.refused.push(`${r.status()} ${path}`);
        if (path === '/api/session') seen.processes.add(answeringProcess(r.headers()));
      });
      // The loser of the race is abandoned when the context closes: its rejection is expected.
      const answered = p.waitForResponse((r) => new URL(r.url()).pathname === data).then(() => 'data', () => 'closed');
      const form = p.waitForSelector('input[name=accessKey]').then(() => 'form', () => 'closed');
      await p.goto(url);
      if ((await Promise.race([answered, form])) === 'form') seen.signedOut++;
      else await p.waitForSelector('header.topbar');
    } finally {
      await context.close();
    }
  };
  // Four contexts at a time: concurrent connections, which the primary spreads over the workers.
  for (let i = 0; i < loads.length; i += 4) await Promise.all(loads.slice(i, i + 4).map(loadOne));
  return seen;
}

describe('console with GRANARY_WORKERS=2', () => {
  let dataDir = '';
  let server: ChildServer;
  let base = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-console-workers-'));
    const consolePort = await freePort();
    server = await spawnServer(
      {
        ...ROOT,
        GRANARY_DATA_DIR: dataDir,
        GRANARY_WORKERS: '2',
        GRANARY_CONSOLE_PORT: String(consolePort),
        GRANARY_CONSOLE_HOST: '127.0.0.1',
        GRANARY_TRUST_PROXY: 'loopback',
      },
      await freePort(),
    );
    base = `http://127.0.0.1:${consolePort}`;
    await consoleUp(base, 2);
  }, 90_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) server.child.kill('SIGTERM');
    await server?.exited;
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 20 session checks on fresh connections after a sign-in with 200, from both workers', async () => {
    const signIn = await freshCall(base, 'POST', '/api/session', {}, { accessKey: AK, secretKey: SK });
    expect(signIn.status).toBe(200);
    const cookie = cookieOf(signIn.headers);
    expect(cookie).toMatch(/^granary_console=/);
    const statuses: Array<number | boolean> = [];
    const processes = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const a = await freshCall<{ signedIn: boolean }>(base, 'GET', '/api/session', { cookie });
      statuses.push(a.status, a.body.signedIn);
      processes.add(answeringProcess(a.headers));
    }
    expect(statuses).toEqual(Array(20).fill([200, true]).flat());
    expect(processes.size).toBe(2);
    // Signed out on one worker means signed out on both.
    const { csrf } = (await freshCall<{ csrf: string }>(base, 'GET', '/api/session', { cookie })).body;
    expect((await freshCall(base, 'DELETE', '/api/session', { cookie, 'x-granary-csrf': csrf })).status).toBe(204);
    for (let i = 0; i < 4; i++) expect((await freshCall(base, 'GET', '/api/session', { cookie })).body).toEqual({ signedIn: false });
  });

  it('in Chromium: signs in, then 8 screen loads on new connections, 0 sign-outs', async () => {
    const loads = await signInThenLoad(
      Array.from({ length: 8 }, (_, i) => {
        const [route, data] = SCREENS[i % SCREENS.length]!;
        return [`${base}/${route}`, data] as [string, string];
      }),
    );
    expect(loads.refused).toEqual([]);
    expect(loads.signedOut).toBe(0);
    expect(loads.processes.size).toBe(2);
  }, 180_000);

  it('counts failed sign-ins once across the workers, per client address behind the trusted proxy', async () => {
    const from = (address: string) => ({ 'x-forwarded-for': address });
    const processes = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const a = await freshCall<{ error: string }>(base, 'POST', '/api/session', from('198.51.100.7'), { accessKey: AK, secretKey: `guess-${i}` });
      expect(a.status, `attempt ${i + 1}`).toBe(401);
      processes.add(answeringProcess(a.headers));
    }
    expect(processes.size).toBe(2);
    const eleventh = await freshCall<{ error: string }>(base, 'POST', '/api/session', from('198.51.100.7'), { accessKey: AK, secretKey: SK });
    expect(eleventh.status).toBe(573);
    expect(eleventh.body.error).toMatch(/too many failed sign-ins/);
    // The guesser's address is throttled; the key's owner elsewhere is not.
    expect((await freshCall(base, 'POST', '/api/session', from('203.0.113.20'), { accessKey: AK, secretKey: SK })).status).toBe(200);
  });

  it('over https seen through the trusted proxy, names the cookie __Host-granary_console (Secure, Path=/, no Domain)', async () => {
    const https = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'console.example' };
    const signIn = await freshCall(base, 'POST', '/api/session', { ...https, origin: 'https://console.example' }, { accessKey: AK, secretKey: SK });
    expect(signIn.status).toBe(200);
    const set = String(signIn.headers['set-cookie']);
    expect(set).toMatch(/^__Host-granary_console=[A-Za-z0-9_-]{43};/);
    expect(set).toMatch(/; Secure/i);
    expect(set).toMatch(/; Path=\//i);
    expect(set).not.toMatch(/Domain=/i);
    const cookie = cookieOf(signIn.headers);
    expect((await freshCall(base, 'GET', '/api/session', { ...https, cookie })).body).toMatchObject({ signedIn: true });
    // The same id under the http name is not a session cookie of an https console, and vice versa.
    const id = cookie.slice(cookie.indexOf('=') + 1);
    expect((await freshCall(base, 'GET', '/api/session', { ...https, cookie: `granary_console=${id}` })).body).toEqual({ signedIn: false });
    expect((await freshCall(base, 'GET', '/api/session', { cookie })).body).toEqual({ signedIn: false });
    // Two __Host- cookies: refused.
    expect((await freshCall(base, 'GET', '/api/session', { ...https, cookie: `${cookie}; ${cookie}` })).status).toBe(400);
  });
});

describe('console on two cluster nodes sharing PostgreSQL', () => {
  let pg: PgTestServer;
  let a: ClusterNode;
  let b: ClusterNode;
  let consoleA = '';
  let consoleB = '';

  beforeAll(async () => {
    pg = await startPgServer();
    const env = { ...ROOT, GRANARY_METADATA: await pg.createDatabase() };
    const [portA, portB] = [await freePort(), await freePort()];
    const host = { GRANARY_CONSOLE_HOST: '127.0.0.1' };
    // One after the other: the first applies the migrations.
    a = await startNode('a', env, { ...host, GRANARY_CONSOLE_PORT: String(portA) });
    b = await startNode('b', env, { ...host, GRANARY_CONSOLE_PORT: String(portB) });
    consoleA = `http://127.0.0.1:${portA}`;
    consoleB = `http://127.0.0.1:${portB}`;
    await Promise.all([consoleUp(consoleA), consoleUp(consoleB)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await pg?.stop();
  });

  it('a session made on node A works on node B, and ends on both when signed out on B', async () => {
    const signIn = await freshCall<{ csrf: string }>(consoleA, 'POST', '/api/session', {}, { accessKey: AK, secretKey: SK });
    expect(signIn.status).toBe(200);
    const cookie = cookieOf(signIn.headers);
    const headers = { cookie, 'x-granary-csrf': signIn.body.csrf };
    expect((await freshCall(consoleB, 'GET', '/api/session', { cookie })).body).toMatchObject({ signedIn: true });
    expect((await freshCall(consoleB, 'POST', '/api/buckets', headers, { name: 'made-on-b' })).status).toBe(200);
    const listed = await freshCall<Array<{ name: string }>>(consoleA, 'GET', '/api/buckets', { cookie });
    expect(listed.body.map((x) => x.name)).toContain('made-on-b');
    expect((await freshCall(consoleB, 'DELETE', '/api/session', headers)).status).toBe(204);
    expect((await freshCall(consoleA, 'GET', '/api/session', { cookie })).body).toEqual({ signedIn: false });
  });

  it('in Chromium: signs in on node A, then 8 screen loads alternating A and B (every screen on both), 0 sign-outs', async () => {
    const loads = await signInThenLoad(
      Array.from({ length: 8 }, (_, i) => {
        const [route, data] = SCREENS[Math.floor(i / 2) % SCREENS.length]!;
        return [`${i % 2 === 0 ? consoleA : consoleB}/${route}`, data] as [string, string];
      }),
    );
    expect(loads.refused).toEqual([]);
    expect(loads.signedOut).toBe(0);
    expect(loads.processes.size).toBe(2);
  }, 180_000);

  it('counts failed sign-ins on both nodes once: 10 failures, the 11th refused with 573', async () => {
    // An AccessKey nobody has: its attempts are counted like any other, and the root key stays usable here.
    for (let i = 0; i < 10; i++) {
      const node = i % 2 === 0 ? consoleA : consoleB;
      expect((await freshCall(node, 'POST', '/api/session', {}, { accessKey: 'guessed-ak', secretKey: `guess-${i}` })).status, `attempt ${i + 1}`).toBe(401);
    }
    expect((await freshCall(consoleA, 'POST', '/api/session', {}, { accessKey: 'guessed-ak', secretKey: 'guess-10' })).status).toBe(573);
    expect((await freshCall(consoleB, 'POST', '/api/session', {}, { accessKey: 'guessed-ak', secretKey: 'guess-11' })).status).toBe(573);
  });
});
