/**
 * The CLI from any folder, as the README says (docs/reference/cli.md): `npm install -g .` in the checkout (here with
 * a temporary `--prefix`, so the machine's global folder is left alone; `--offline`: a link needs no
 * download; `--ignore-scripts`: dist/ is already built by test/global-setup.ts with the same tsc as `prepare`, whose
 * rebuild would rewrite dist/ under the files running beside this one and cost ~20 CPU-s), then `granary --help`, `granary remote add` and a remote `ls` run from an empty folder outside the
 * checkout.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, runAsync } from '../helpers/cli.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { upload } from '../helpers/http.js';

const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) => runAsync(cmd, args, { cwd, env });

describe('the CLI installed from the checkout', { timeout: 240_000 }, () => {
  let s: TestServer;
  let work: string;

  beforeAll(async () => {
    s = await startTestServer();
    work = await mkdtemp(join(tmpdir(), 'granary-install-'));
  }, 60_000);
  afterAll(async () => {
    await s.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('npm install -g . puts granary on the PATH; --help, remote add and ls work from an empty folder', async () => {
    const prefix = join(work, 'global');
    const installed = await run('npm', ['install', '-g', '.', '--prefix', prefix, '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], REPO_ROOT, cleanEnv());
    expect(installed.status, installed.stderr).toBe(0);
    const bin = join(prefix, 'bin', 'granary');
    expect(existsSync(bin)).toBe(true);

    const empty = join(work, 'elsewhere');
    await mkdir(empty);
    const env = cleanEnv({ PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`, GRANARY_CONFIG_DIR: join(work, 'config') });
    const help = await run('granary', ['--help'], empty, env);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: granary \[options\] \[command\]/);

    expect((await sdk(s.bucketManager().createBucket('installed', { regionId: 'z0' }))).status).toBe(200);
    await upload(s, 'installed', 'hello.txt', 'hello from anywhere');
    const added = await run('granary', ['remote', 'add', 'home', '--ak', AK, '--sk', SK, '--uc-host', s.host], empty, env);
    expect(added.status, added.stderr).toBe(0);
    const ls = await run('granary', ['ls', 'home:installed'], empty, env);
    expect(ls.status, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^hello\.txt\t19\t/);
    // Nothing was written where the commands ran.
    expect(await readdir(empty)).toEqual([]);
  });
});
