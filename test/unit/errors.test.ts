/**
 * The error catalogue checks itself (after fastify's test/internals/errors.test.js): every entry's kind is its
 * key, every status is one Kodo or HTTP defines for that meaning, every message says something, every entry is
 * used somewhere in src/, and storage failures map to the storage entries. Plus the KodoError helpers:
 * details, headers (withHeaders) and isKodoError narrowing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Errors, isKodoError, KodoError, storageError, type ErrorKind } from '../../src/errors.js';

const KINDS = Object.keys(Errors) as ErrorKind[];

/** The error codes of docs/development/kodo-protocol.md §8.7 (its 2xx/3xx rows are not errors). */
const PROTOCOL_STATUSES = [400, 401, 403, 404, 405, 406, 413, 419, 478, 573, 579, 599, 608, 612, 613, 614, 630, 631, 640, 701];

/** Standard HTTP statuses used with their standard meaning (RFC 9110), where §8.7 has no code of its own. */
const HTTP_STATUSES = [
  414, // URI Too Long: a path parameter over the router's limit (uriTooLong, server.ts frameworkErrors).
  415, // Unsupported Media Type: a fop input the server cannot process — an image format it does not decode
  //      (unsupportedImage) or media whose program is not installed (videoToolMissing).
  416, // Range Not Satisfiable: a download Range past the object's end; sent with `Content-Range: bytes */<size>`.
  503, // Service Unavailable: IAM data could not be read, a sub-user's request is refused (iamUnavailable, fail closed).
  504, // Gateway Timeout: fetch/mirror act as a gateway and the origin did not answer in time (originTimeout).
];

const ALLOWED_STATUSES = new Set([...PROTOCOL_STATUSES, ...HTTP_STATUSES]);

/** storageError's table: errno / SQLite code → entry (ENOENT is not a storage failure). */
const STORAGE_CASES: [string, ErrorKind][] = [
  ['ENOSPC', 'storageFull'],
  ['EDQUOT', 'storageFull'],
  ['SQLITE_FULL', 'storageFull'],
  ['EROFS', 'storageReadOnly'],
  ['SQLITE_READONLY', 'storageReadOnly'],
  ['EACCES', 'storageDenied'],
  ['EIO', 'storageIo'],
  ['SQLITE_IOERR_WRITE', 'storageIo'],
  ['S3_QuotaExceeded', 'storageFull'],
  ['S3_AccessDenied', 'storageRemote'],
  ['S3_ECONNREFUSED', 'storageRemote'],
  ['PG_UNREACHABLE', 'metadataRemote'],
  ['PG_DISK_FULL', 'metadataRemote'],
];

/** Text of every .ts file under src/ but errors.ts and errors-when.ts (which names every entry, for the docs). */
function sourcesOutsideCatalogue(): string {
  const root = fileURLToPath(new URL('../../src', import.meta.url));
  return (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !['errors.ts', 'errors-when.ts'].some((c) => join(root, f) === join(root, c)))
    .map((f) => readFileSync(join(root, f), 'utf8'))
    .join('\n');
}

describe('the catalogue', () => {
  it('has entries, each a factory of a KodoError', () => {
    expect(KINDS.length).toBeGreaterThan(50);
    for (const kind of KINDS) expect(Errors[kind](), kind).toBeInstanceOf(KodoError);
  });

  it.each(KINDS)("%s: its kind is its key", (kind) => {
    expect(Errors[kind]().kind).toBe(kind);
  });

  it.each(KINDS)('%s: its status is an allowed one', (kind) => {
    expect(ALLOWED_STATUSES.has(Errors[kind]().status), `${kind} → ${Errors[kind]().status}`).toBe(true);
  });

  it.each(KINDS)('%s: its message is not empty', (kind) => {
    const { message } = Errors[kind]();
    expect(message.trim()).not.toBe('');
    expect(message).toBe(message.trim());
  });

  it('has no unused entry: each appears as Errors.<kind> or a quoted kind in src/ (or is a storageError result)', () => {
    const src = sourcesOutsideCatalogue();
    const viaStorage = new Set(STORAGE_CASES.map(([, kind]) => kind));
    const unused = KINDS.filter(
      (kind) => !viaStorage.has(kind) && !new RegExp(`Errors\\.${kind}\\b|['"]${kind}['"]`).test(src),
    );
    expect(unused).toEqual([]);
  });

  it('appends a detail after ": "', () => {
    expect(Errors.noSuchBucket().message).toBe('no such bucket');
    expect(Errors.noSuchBucket('photos').message).toBe('no such bucket: photos');
    expect(Errors.noSuchBucket('').message).toBe('no such bucket');
    expect(Errors.noSuchBucket('photos').status).toBe(631);
  });
});

describe('storageError', () => {
  it.each(STORAGE_CASES)('%s → %s (599), naming the code and not the path', (code, kind) => {
    const err = Object.assign(new Error(`${code}: failed, open '/srv/granary/data/x'`), { code });
    const kodo = storageError(err, 'staging the upload');
    expect(kodo?.kind).toBe(kind);
    expect(kodo?.status).toBe(599);
    expect(kodo?.message).toContain(`staging the upload (${code})`);
    expect(kodo?.message).not.toContain('/srv');
  });

  it('is undefined for ENOENT and for values without a code', () => {
    expect(storageError(Object.assign(new Error('gone'), { code: 'ENOENT' }))).toBeUndefined();
    expect(storageError(new Error('plain'))).toBeUndefined();
    expect(storageError(null)).toBeUndefined();
    expect(storageError('ENOSPC')).toBeUndefined();
  });
});

describe('KodoError', () => {
  it('carries no headers unless given; withHeaders adds them to a copy', () => {
    const plain = Errors.rangeNotSatisfiable();
    expect(plain.headers).toBeUndefined();
    const ranged = plain.withHeaders({ 'content-range': 'bytes */11' });
    expect(ranged.headers).toEqual({ 'content-range': 'bytes */11' });
    expect([ranged.kind, ranged.status, ranged.message]).toEqual([plain.kind, plain.status, plain.message]);
    expect(ranged).toBeInstanceOf(KodoError);
    expect(plain.headers).toBeUndefined();
    expect(ranged.withHeaders({ 'x-a': '1' }).headers).toEqual({ 'content-range': 'bytes */11', 'x-a': '1' });
  });

  it('isKodoError narrows to any catalogue error, or to the given kinds', () => {
    const exists: unknown = Errors.fileExists('k');
    expect(isKodoError(exists)).toBe(true);
    expect(isKodoError(exists, 'fileExists')).toBe(true);
    expect(isKodoError(exists, 'noSuchEntry', 'fileExists')).toBe(true);
    expect(isKodoError(exists, 'bucketExists')).toBe(false); // same status (614), another entry
    expect(isKodoError(new Error('file exists'))).toBe(false);
    expect(isKodoError({ kind: 'fileExists', status: 614, message: 'file exists' }, 'fileExists')).toBe(false);
    if (isKodoError(exists, 'fileExists')) {
      const kind: 'fileExists' = exists.kind; // narrowed at compile time
      expect(kind).toBe('fileExists');
    }
  });
});
