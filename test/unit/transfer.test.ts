/** Pure parts of the transfer CLI: locations, key → path safety, globs, rates, etags, the sync planner, checkpoints. */
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../src/transfer/checkpoint.js';
import { EtagHasher, isQetag } from '../../src/transfer/local-etag.js';
import { dirPrefix, keyToRelPath, parseLocation } from '../../src/transfer/location.js';
import { KeyFilter } from '../../src/transfer/session.js';
import { decide, extras, type SideEntry } from '../../src/transfer/sync-plan.js';
import { parseRate } from '../../src/transfer/throttle.js';

const known = new Set(['qiniu', 'home']);

describe('transfer: locations', () => {
  it('reads <remote>:<bucket>[/<prefix>] for known remotes, anything else as a local path', () => {
    expect(parseLocation('qiniu:photos', known)).toEqual({ kind: 'remote', remote: 'qiniu', bucket: 'photos', prefix: '' });
    expect(parseLocation('home:b/2024/a b.jpg', known)).toEqual({ kind: 'remote', remote: 'home', bucket: 'b', prefix: '2024/a b.jpg' });
    expect(parseLocation('home:b/', known)).toMatchObject({ prefix: '' });
    expect(parseLocation('other:b', known)).toEqual({ kind: 'local', path: 'other:b' });
    expect(parseLocation('./qiniu:b', known)).toEqual({ kind: 'local', path: './qiniu:b' });
    expect(() => parseLocation('qiniu:', known)).toThrow(/not <remote>:<bucket>/);
    expect(dirPrefix('')).toBe('');
    expect(dirPrefix('a')).toBe('a/');
    expect(dirPrefix('a/')).toBe('a/');
  });

  it('refuses keys that are not safe relative paths', () => {
    expect(keyToRelPath('a/b/c.jpg')).toBe(join('a', 'b', 'c.jpg'));
    for (const bad of ['../etc/passwd', 'a/../../b', '/abs', 'a//b', 'a/./b', '', 'nul\0byte']) expect(() => keyToRelPath(bad), bad).toThrow(/cannot be a local path/);
  });
});

describe('transfer: globs and rates', () => {
  it('includes and excludes relative keys; a pattern without / matches at any depth', () => {
    const f = new KeyFilter(['*.jpg'], ['raw/**']);
    expect(f.admits('a.jpg')).toBe(true);
    expect(f.admits('x/y/a.jpg')).toBe(true);
    expect(f.admits('a.png')).toBe(false);
    expect(f.admits('raw/a.jpg')).toBe(false);
    expect(new KeyFilter().admits('.hidden/x')).toBe(true);
  });

  it('parses --bwlimit with K/M/G suffixes (powers of 1024)', () => {
    expect(parseRate('500K')).toBe(512_000);
    expect(parseRate('10M')).toBe(10 * 1024 * 1024);
    expect(parseRate('1.5MiB/s')).toBe(1.5 * 1024 * 1024);
    expect(parseRate('2048')).toBe(2048);
    for (const bad of ['fast', '0', '-1M', '']) expect(() => parseRate(bad), bad).toThrow(/bwlimit/);
  });
});

describe('transfer: etags', () => {
  const etag = (...chunks: Buffer[]): string => {
    const h = new EtagHasher();
    for (const c of chunks) h.update(c);
    return h.etag();
  };
  it('matches docs/development/kodo-protocol.md §7 vectors in any slicing', () => {
    expect(etag()).toBe('Fto5o-5ea0sNMlW_75VgGJCv2AcJ');
    expect(etag(Buffer.from('a'), Buffer.from('bc'))).toBe('FqmZPjZHBoFquj4lcXhQwmyc0Nid');
    const big = Buffer.alloc(4194314, 7);
    expect(etag(big)).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
    expect(etag(big.subarray(0, 1000), big.subarray(1000, 4194305), big.subarray(4194305))).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
    expect(isQetag('lrStvm4Y3Hueha7WZO5cr_dSW_Dg')).toBe(true);
    expect(isQetag('nABC')).toBe(false);
  });
});

describe('transfer: sync planner', () => {
  const remote = (rel: string, size: number, hash: string): SideEntry => ({ rel, size, entry: { key: rel, fsize: size, hash, mimeType: '', putTime: 0, type: 0 } });
  it('copies new keys, other sizes and other etags; skips the same; compares v2 etags by size', async () => {
    expect(await decide(remote('a', 1, 'Fx'), undefined)).toEqual({ op: 'copy', reason: 'new' });
    expect(await decide(remote('a', 1, 'Fx'), remote('a', 2, 'Fx'))).toEqual({ op: 'copy', reason: 'size' });
    expect(await decide(remote('a', 1, 'FaaaaaaaaaaaaaaaaaaaaaaaaaaA'), remote('a', 1, 'FbbbbbbbbbbbbbbbbbbbbbbbbbbB'))).toEqual({ op: 'copy', reason: 'etag' });
    expect(await decide(remote('a', 1, 'FaaaaaaaaaaaaaaaaaaaaaaaaaaA'), remote('a', 1, 'FaaaaaaaaaaaaaaaaaaaaaaaaaaA'))).toEqual({ op: 'skip', reason: 'same' });
    expect(await decide(remote('a', 9, 'nPartsEtag'), remote('a', 9, 'FaaaaaaaaaaaaaaaaaaaaaaaaaaA'))).toEqual({ op: 'skip', reason: 'same' });
  });
  it('deletes only destination extras the filter admits', () => {
    const src = new Map([['a', remote('a', 1, 'F')]]);
    const dst = new Map([
      ['a', remote('a', 1, 'F')],
      ['b.jpg', remote('b.jpg', 1, 'F')],
      ['c.txt', remote('c.txt', 1, 'F')],
    ]);
    expect(extras(src, dst, new KeyFilter(['*.jpg'])).map((e) => e.rel)).toEqual(['b.jpg']);
  });
});

describe('transfer: migrate checkpoint', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-checkpoint-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('resumes tasks and done keys, forgets failed ones, ignores a cut last line, refuses another migration', async () => {
    const file = join(dir, 'cp.jsonl');
    const cp = Checkpoint.open(file, 'a:b/', 'c:d/', false);
    cp.task('k1', 'task-1');
    cp.done('k2', 'Fhash', 'stream');
    cp.task('k3', 'task-3');
    cp.failed('k3', 'boom');
    await appendFile(file, '{"k":"k4","s":"do'); // a line cut by a kill
    const again = Checkpoint.open(file, 'a:b/', 'c:d/', false);
    expect(again.resumed).toBe(4);
    expect(again.state('k1')).toEqual({ task: 'task-1' });
    expect(again.state('k2')).toEqual({ done: 'Fhash' });
    expect(again.state('k3')).toEqual({});
    expect(again.state('k4')).toEqual({});
    expect(() => Checkpoint.open(file, 'a:b/', 'x:y/', false)).toThrow(/belongs to a:b\/ → c:d\//);
    const fresh = Checkpoint.open(file, 'a:b/', 'x:y/', true);
    expect(fresh.resumed).toBe(0);
    expect((await readFile(file, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
  });
});
