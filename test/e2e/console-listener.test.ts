/**
 * The console listener (console/listener.ts): its own port, the main listener's error conventions, a `register`
 * hook for the web console, off with GRANARY_CONSOLE_PORT=0, closed with the server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startGranary } from '../../src/main.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

describe('console listener', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.stop());

  it('listens on its own port and answers unknown API routes like the main listener', async () => {
    expect(s.consoleUrl).toBeDefined();
    expect(s.consoleUrl).not.toBe(s.url);
    const res = await fetch(`${s.consoleUrl}/api/no/such/thing`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-reqid')).toMatch(/^[\w-]+$/);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('refuses a malformed path with a JSON 400', async () => {
    const res = await fetch(`${s.consoleUrl}/%zz`);
    expect(res.status).toBe(400);
    expect(await res.json()).toHaveProperty('error');
  });

  it('serves the web console, not the Kodo API', async () => {
    // Other paths are the console app's client-side routes: its page, never a Kodo answer.
    const res = await fetch(`${s.consoleUrl}/health/live`);
    expect(res.headers.get('content-type')).not.toMatch(/json/);
    expect(await res.text()).not.toMatch(/"status"/);
  });
});

describe('console listener: register, disable, close', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const config = async (env: Record<string, string>) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'granary-console-'));
    dirs.push(dataDir);
    return loadConfig({
      GRANARY_PORT: '0',
      GRANARY_HOST: '127.0.0.1',
      GRANARY_DATA_DIR: dataDir,
      GRANARY_ACCESS_KEY: AK,
      GRANARY_SECRET_KEY: SK,
      GRANARY_SCRUB_BYTES_PER_SEC: '0',
      GRANARY_S3_PORT: '0',
      ...env,
    });
  };
  const logger = pino({ level: 'silent' });

  it('adds the routes `register` declares, and stops listening at close', async () => {
    const cfg = await config({});
    cfg.consolePort = 0;
    const running = await startGranary(cfg, {
      logger,
      registerConsole: (app) => {
        app.get('/hello', async () => ({ hello: 'console' }));
      },
    });
    const url = running.console?.url ?? '';
    try {
      expect(running.console?.port).toBeGreaterThan(0);
      const res = await fetch(`${url}/hello`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ hello: 'console' });
    } finally {
      await running.close();
    }
    await expect(fetch(`${url}/hello`)).rejects.toThrow();
  });

  it('GRANARY_CONSOLE_PORT=0 disables it; the default is 9001 on loopback, even when GRANARY_HOST is every interface', async () => {
    const off = await config({ GRANARY_CONSOLE_PORT: '0' });
    expect(off.consolePort).toBeUndefined();
    const running = await startGranary(off, { logger });
    try {
      expect(running.console).toBeUndefined();
    } finally {
      await running.close();
    }
    const defaults = loadConfig({ GRANARY_HOST: '0.0.0.0' });
    expect(defaults.consolePort).toBe(9001);
    expect(defaults.consoleHost).toBe('127.0.0.1');
    expect(loadConfig({ GRANARY_HOST: '10.0.0.1', GRANARY_CONSOLE_HOST: '127.0.0.1' }).consoleHost).toBe('127.0.0.1');
    expect(() => loadConfig({ GRANARY_CONSOLE_PORT: '70000' })).toThrow(/GRANARY_CONSOLE_PORT/);
  });
});
