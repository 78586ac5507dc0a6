/**
 * mkzip's zip writer (src/fops/files/zip-writer.ts, on yazl; docs/development/kodo-protocol.md §10.9): whole and
 * stream entries, deflated or stored, read back by Info-ZIP (`unzip -t`, `zipinfo`) and by Python's zipfile byte
 * for byte; ZIP64 records (forced; yazl writes them by itself past 65,535 entries); GBK names without the UTF-8 flag (swapped
 * into yazl's headers); the choice of method (`worthDeflating`); a failing stream fails the archive; whole entries
 * queued in yazl are bounded.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareEntry, QUEUED, STREAM_HEAD, worthDeflating, ZipWriter, type ZipNameEncoding } from '../../src/fops/files/zip-writer.js';

/** `n` pseudo-random (incompressible) bytes, the same for the same `seed`. */
function random(n: number, seed: string): Buffer {
  const blocks: Buffer[] = [];
  for (let k = 0; k * 32 < n; k++) blocks.push(createHash('sha256').update(`${seed}/${k}`).digest());
  return Buffer.concat(blocks).subarray(0, n);
}

/** `n` bytes of text. */
function text(n: number): Buffer {
  return Buffer.from(Array.from({ length: Math.ceil(n / 40) }, (_, i) => `line ${i} of some text to compress\n`).join('')).subarray(0, n);
}

/** A stream of `data` in chunks of `chunk` bytes. */
function chunked(data: Buffer, chunk: number): Readable {
  const parts: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunk) parts.push(data.subarray(i, i + chunk));
  return Readable.from(parts);
}

type Entry = [name: string, data: Buffer, how: 'whole' | 'stream'];

/** Writes `entries` into a zip (in memory: these are small) and answers its bytes. */
async function zipOf(entries: Entry[], encoding: ZipNameEncoding = 'utf-8', opts: { forceZip64?: boolean } = {}): Promise<Buffer> {
  const w = new ZipWriter(encoding, opts);
  const chunks: Buffer[] = [];
  const collected = new Promise<Buffer>((resolve, reject) => {
    w.output.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
  const mtime = new Date('2024-05-06T07:08:10Z');
  for (const [name, data, how] of entries) {
    const size = await w.add(name, how === 'whole' ? prepareEntry(data) : chunked(data, 10_007), mtime);
    expect(size).toBe(data.length);
  }
  await w.end();
  return collected;
}

/** Python's view of a zip: per entry its name (decoded as `encoding`), method, and the SHA-256 of its bytes. */
function pythonRead(path: string, encoding = 'utf-8'): Array<{ name: string; method: number; sha256: string; flags: number }> {
  const script = [
    'import sys, json, hashlib, zipfile',
    `z = zipfile.ZipFile(sys.argv[1], metadata_encoding=${encoding === 'utf-8' ? 'None' : "'gbk'"})`,
    'print(json.dumps([{"name": i.filename, "method": i.compress_type, "flags": i.flag_bits, "sha256": hashlib.sha256(z.read(i)).hexdigest()} for i in z.infolist()]))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script, path], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })) as Array<{
    name: string;
    method: number;
    sha256: string;
    flags: number;
  }>;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('zip writer', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-zip-writer-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const save = async (name: string, zip: Buffer): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, zip);
    return path;
  };

  it('whole and stream entries, deflated or stored, read back byte for byte by unzip and Python', async () => {
    const entries: Entry[] = [
      ['text.txt', text(50_000), 'whole'],
      ['random.bin', random(50_000, 'a'), 'whole'],
      ['empty.txt', Buffer.alloc(0), 'whole'],
      ['tiny.txt', Buffer.from('hi\n'), 'whole'],
      ['dir/big-text.txt', text(STREAM_HEAD * 3 + 123), 'stream'],
      ['dir/big-random.bin', random(STREAM_HEAD * 2 + 5, 'b'), 'stream'],
      ['dir/short-stream.txt', text(1000), 'stream'],
      ['目录/名字.txt', text(3000), 'whole'],
    ];
    const path = await save('mixed.zip', await zipOf(entries));
    execFileSync('unzip', ['-tq', path]);
    const read = pythonRead(path);
    expect(read.map((r) => r.name)).toEqual(entries.map(([n]) => n));
    for (const [i, [name, data]] of entries.entries()) expect(read[i]!.sha256, name).toBe(sha(data));
    const method = Object.fromEntries(read.map((r) => [r.name, r.method]));
    // 8 = deflated, 0 = stored: what compresses is deflated, random bytes and empty files are stored.
    expect(method).toMatchObject({ 'text.txt': 8, 'random.bin': 0, 'empty.txt': 0, 'dir/big-text.txt': 8, 'dir/big-random.bin': 0, 'dir/short-stream.txt': 8 });
    // UTF-8 names carry the language-encoding flag; only stream entries have a data descriptor (bit 3).
    for (const r of read) expect(r.flags & 0x800, r.name).toBe(0x800);
    expect(read.filter((r) => r.flags & 0x8).map((r) => r.name)).toEqual(['dir/big-text.txt', 'dir/big-random.bin']);
    // Info-ZIP sees the same methods (zipinfo: defN / stor).
    const info = execFileSync('zipinfo', [path], { encoding: 'utf8' });
    expect(info).toMatch(/stor .* random\.bin/);
    expect(info).toMatch(/defN .* text\.txt/);
  });

  it('a stored whole entry first (yazl writes it inside addBuffer) and stored entries in a row', async () => {
    const entries: Entry[] = [
      ['r1.bin', random(40_000, 'r1'), 'whole'],
      ['r2.bin', random(40_000, 'r2'), 'whole'],
      ['t.txt', text(10_000), 'whole'],
      ['r3.bin', random(40_000, 'r3'), 'whole'],
    ];
    const path = await save('stored-first.zip', await zipOf(entries));
    execFileSync('unzip', ['-tq', path]);
    const read = pythonRead(path);
    for (const [i, [name, data]] of entries.entries()) expect(read[i]!.sha256, name).toBe(sha(data));
    expect(read.map((r) => r.method)).toEqual([0, 0, 8, 0]);
  });

  it('forced ZIP64 records are read back by unzip and Python', async () => {
    const entries: Entry[] = [
      ['a.txt', text(20_000), 'whole'],
      ['b.bin', random(STREAM_HEAD + 10, 'c'), 'stream'],
      ['c.txt', text(STREAM_HEAD + 10), 'stream'],
    ];
    const zip = await zipOf(entries, 'utf-8', { forceZip64: true });
    expect(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true); // ZIP64 end of central directory record
    expect(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x07]))).toBe(true); // … and its locator
    const path = await save('zip64.zip', zip);
    execFileSync('unzip', ['-tq', path]);
    const read = pythonRead(path);
    for (const [i, [name, data]] of entries.entries()) expect(read[i]!.sha256, name).toBe(sha(data));
  });

  it('GBK names are GBK bytes without the UTF-8 flag', async () => {
    const zip = await zipOf([['文本.txt', text(100), 'whole'], ['目录/数据.bin', random(STREAM_HEAD + 1, 'd'), 'stream']], 'gbk');
    expect(zip.includes(Buffer.from('文本.txt'))).toBe(false);
    expect(zip.includes(Buffer.from('cec4b1be2e747874', 'hex'))).toBe(true);
    const read = pythonRead(await save('gbk.zip', zip), 'gbk');
    expect(read.map((r) => r.name)).toEqual(['文本.txt', '目录/数据.bin']);
    for (const r of read) expect(r.flags & 0x800).toBe(0);
  });

  it('worthDeflating: text yes; random bytes no; a compressible header before random bytes (a photo) no', () => {
    expect(worthDeflating(text(100_000))).toBe(true);
    expect(worthDeflating(random(100_000, 'e'))).toBe(false);
    expect(worthDeflating(Buffer.concat([text(20_000), random(200_000, 'f')]))).toBe(false);
    // Short entries are always deflated (a sample would cost about as much); an empty one is stored.
    expect(worthDeflating(random(1000, 'g'))).toBe(true);
    expect(prepareEntry(Buffer.alloc(0)).compress).toBe(false);
    expect(prepareEntry(random(50_000, 'h')).compress).toBe(false);
  });

  it('whole entries: add returns while up to QUEUED wait to be written, then waits for the oldest', async () => {
    const w = new ZipWriter('utf-8');
    // Nobody reads the output yet: the writes pile up, and only QUEUED whole entries may be waiting in yazl.
    const big = prepareEntry(text(200_000));
    for (let i = 0; i < QUEUED; i++) await w.add(`q${i}.txt`, big, new Date());
    let returned = false;
    const next = w.add('last.txt', big, new Date()).then(() => (returned = true));
    const chunks: Buffer[] = [];
    const ended = new Promise((resolve) => w.output.on('end', resolve));
    await new Promise((resolve) => setTimeout(resolve, 5));
    w.output.on('data', (c: Buffer) => chunks.push(c));
    await next;
    expect(returned).toBe(true);
    await w.end();
    await ended;
    const path = await save('queued.zip', Buffer.concat(chunks));
    execFileSync('unzip', ['-tq', path]);
    expect(pythonRead(path)).toHaveLength(QUEUED + 1);
  });

  it('a failing stream rejects add and ends the output with the error; bad names and misuse throw', async () => {
    const w = new ZipWriter('utf-8');
    const failed = new Promise<Error>((resolve) => w.output.on('error', resolve));
    w.output.resume();
    const boom = new Readable({
      read() {
        this.destroy(new Error('boom'));
      },
    });
    const adding = w.add('x.bin', boom, new Date());
    await expect(adding).rejects.toThrow('boom');
    // The archive is unusable afterwards (part of the entry may be in it).
    await expect(w.add('y.txt', prepareEntry(text(10)), new Date())).rejects.toThrow('boom');
    expect((await failed).message).toBe('boom');
    const d = new ZipWriter('utf-8');
    d.output.destroy();
    await expect(d.add('y.txt', prepareEntry(text(10)), new Date())).rejects.toThrow(/closed/);

    const v = new ZipWriter('utf-8');
    v.output.resume();
    // A bad name is refused before anything is written: the archive goes on.
    await expect(v.add('../up.txt', prepareEntry(text(10)), new Date())).rejects.toThrow(/bad entry name/);
    const slow = v.add('a.txt', chunked(text(STREAM_HEAD * 2), 1000), new Date());
    await expect(v.add('b.txt', prepareEntry(text(10)), new Date())).rejects.toThrow(/one at a time/);
    await slow;
  });
});
