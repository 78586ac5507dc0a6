/**
 * The README's SDK quick start runs as pasted: its ```js block is taken from README.md, pointed at a test server
 * (its HOST, AK and SK lines replaced) and run with `node` as an ES module; it must create the bucket, upload
 * with a form upload and download the object back.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The code block that follows the "Quick start with the SDK" heading. */
async function quickStart(): Promise<string> {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const section = readme.split(/^## Quick start with the SDK$/m)[1];
  if (section === undefined) throw new Error('README.md has no "Quick start with the SDK" section');
  const block = /^```js\n([\s\S]*?)^```$/m.exec(section.split(/^## /m)[0]!);
  if (!block) throw new Error('the quick start has no ```js block');
  return block[1]!;
}

/** Replaces the value of `const NAME = '…';` in the snippet, failing when the line is not there. */
function setConst(code: string, name: string, value: string): string {
  const re = new RegExp(`^const ${name} = '[^']*';`, 'm');
  if (!re.test(code)) throw new Error(`the quick start has no line "const ${name} = '…';"`);
  return code.replace(re, `const ${name} = ${JSON.stringify(value)};`);
}

describe('README quick start', () => {
  let server: TestServer;
  let dir: string;

  beforeAll(async () => {
    server = await startTestServer();
    dir = await mkdtemp(join(tmpdir(), 'granary-quickstart-'));
  });

  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates a bucket, uploads and downloads as written', async () => {
    let code = await quickStart();
    code = setConst(code, 'HOST', server.host);
    code = setConst(code, 'AK', AK);
    code = setConst(code, 'SK', SK);
    // The snippet imports 'qiniu' as a user's project would; from a temp dir, point it at this repository's copy.
    const qiniuUrl = pathToFileURL(createRequire(import.meta.url).resolve('qiniu')).href;
    expect(code).toMatch(/^import qiniu from 'qiniu';$/m);
    code = code.replace(/^import qiniu from 'qiniu';$/m, `import qiniu from ${JSON.stringify(qiniuUrl)};`);
    const file = join(dir, 'quickstart.mjs');
    await writeFile(file, code);

    const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: dir, timeout: 30_000 });
    expect(stdout).toMatch(/^bucket: 200$/m);
    expect(stdout).toMatch(/^upload: 200 hello\.txt \S+$/m);
    expect(stdout).toMatch(/^download: 200 Hello, Granary!$/m);

    const stat = await server.bucketManager().stat('quickstart', 'hello.txt');
    expect(stat.resp.statusCode).toBe(200);
  });
});
