/**
 * A 50 MiB `granary put` (resumable v2, 4 MiB parts) SIGKILLed mid-file once 28 MiB of parts are recorded, then
 * run again: it resumes from its record (uploadId and the parts the server lists), so the bytes the server
 * receives the second time — measured on its /metrics (`granary_http_received_bytes_total`) — stay well under
 * the file's size, and the stored etag is the local file's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileEtag } from '../../src/transfer/local-etag.js';
import { RemoteStore } from '../../src/transfer/remotes.js';
import { scrape } from '../helpers/metrics.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { summaryOf, TransferCli } from '../helpers/transfer.js';

const MiB = 1024 * 1024;
const SIZE = 50 * MiB;

/** The highest `bytes` of the complete `progress` lines of a JSON run so far. */
function progressBytes(out: string): number {
  const lines = out.split('\n').slice(0, -1);
  return Math.max(0, ...lines.filter((l) => l.includes('"event":"progress"')).map((l) => (JSON.parse(l) as { bytes: number }).bytes));
}

/** Bytes the server has received from clients so far, every role. */
async function received(server: TestServer): Promise<number> {
  return (await scrape(server)).filter((s) => s.name === 'granary_http_received_bytes_total').reduce((n, s) => n + s.value, 0);
}

// Generous limits: the machine is shared; nothing here asserts a duration.
describe('transfer: a killed put resumes mid-file', { timeout: 240_000 }, () => {
  let server: TestServer;
  let work: string;
  let cli: TransferCli;
  let file: string;

  beforeAll(async () => {
    server = await startTestServer();
    work = await mkdtemp(join(tmpdir(), 'granary-resume-'));
    cli = await TransferCli.create(join(work, 'config'));
    await new RemoteStore(cli.configDir).put({ name: 'loc', accessKey: AK, secretKey: SK, ucHost: server.host });
    await sdk(server.bucketManager().createBucket('box', {} as never));
    file = join(work, 'big.bin');
    await writeFile(file, randomBytes(SIZE));
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('sends the second time well under 60% of the file, and the etags match', async () => {
    const args = ['put', file, 'loc:box/big.bin', '--json'];
    const first = cli.start([...args, '--bwlimit', '12M']);
    await first.waitFor((out) => progressBytes(out) >= 28 * MiB);
    first.child.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    const records = join(cli.configDir, 'records');
    expect((await readdir(records)).filter((n) => n.endsWith('.json'))).toHaveLength(1);

    const before = await received(server);
    const second = await cli.json(args);
    const sent = (await received(server)) - before;
    expect(second.status, second.stderr).toBe(0);
    const ev = second.events.find((e) => e.event === 'file');
    expect(ev).toMatchObject({ action: 'copied', via: 'multipart', bytes: SIZE });
    const summary = summaryOf(second.events);
    // Reported for the record: what the resumed run sent, by the server's count and the CLI's.
    console.log(`resume: server received ${sent} bytes (${((100 * sent) / SIZE).toFixed(1)}% of ${SIZE}); CLI sent ${String(summary.bytes)}, resumed ${String(ev?.resumedBytes)}`);
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(0.6 * SIZE);
    expect(summary.bytes as number).toBeLessThan(0.6 * SIZE);
    expect(summary.skippedBytes as number).toBeGreaterThanOrEqual(28 * MiB);
    expect(ev?.resumedBytes as number).toBeGreaterThanOrEqual(28 * MiB);
    expect((await readdir(records)).filter((n) => n.endsWith('.json'))).toEqual([]);
    const stat = await sdk<{ hash: string; fsize: number }>(server.bucketManager().stat('box', 'big.bin'));
    expect(stat.data).toMatchObject({ hash: await fileEtag(file), fsize: SIZE });
  });
});
