/**
 * PostgreSQL failures → PG_<reason> codes (store/postgres/pg-errors.ts) → 599 `metadataRemote` (errors.ts): what
 * means the database failed or is unreachable is mapped, a statement's own error (a constraint, a serialization
 * failure) is left as it is.
 */
import { describe, expect, it } from 'vitest';
import { storageError } from '../../src/errors.js';
import { fromPg, PgUnavailable } from '../../src/store/postgres/pg-errors.js';

/** An error as pg reports it: a DatabaseError with a SQLSTATE, or a socket error with an errno. */
const withCode = (code: string, message = 'boom'): Error => Object.assign(new Error(message), { code });

describe('fromPg', () => {
  it.each([
    [withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), 'PG_UNREACHABLE'],
    [withCode('ECONNRESET'), 'PG_CONNECTION_LOST'],
    [new Error('Connection terminated unexpectedly'), 'PG_CONNECTION_LOST'],
    [new Error('timeout exceeded when trying to connect'), 'PG_TIMEOUT'],
    [new Error('Connection terminated due to connection timeout'), 'PG_TIMEOUT'],
    [new Error('Query read timeout'), 'PG_TIMEOUT'],
    [withCode('57014', 'canceling statement due to statement timeout'), 'PG_TIMEOUT'],
    [withCode('57P01', 'terminating connection due to administrator command'), 'PG_SHUTDOWN'],
    [withCode('53300', 'sorry, too many clients already'), 'PG_TOO_MANY_CONNECTIONS'],
    [withCode('53100', 'could not extend file: No space left on device'), 'PG_DISK_FULL'],
    [withCode('25006', 'cannot execute INSERT in a read-only transaction'), 'PG_READ_ONLY'],
    [withCode('28P01', 'password authentication failed'), 'PG_AUTH'],
    [withCode('08006'), 'PG_08006'],
    [Object.assign(new AggregateError([withCode('ECONNREFUSED')], ''), { code: 'ECONNREFUSED' }), 'PG_UNREACHABLE'],
  ])('%s → %s, a 599 naming the metadata database', (err, code) => {
    const mapped = fromPg(err);
    expect(mapped).toBeInstanceOf(PgUnavailable);
    expect((mapped as PgUnavailable).code).toBe(code);
    expect((mapped as PgUnavailable).cause).toBe(err);
    const kodo = storageError(mapped);
    expect(kodo?.status).toBe(599);
    expect(kodo?.kind).toBe('metadataRemote');
    expect(kodo?.message).toBe(`the metadata database (PostgreSQL) failed or did not answer: ${code}`);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a serialization failure (retried by PgDb.tx)', withCode('40001')],
    ['a syntax error', withCode('42601')],
    ['an error without a code', new Error('something else')],
  ])('leaves %s as it is', (_what, err) => {
    expect(fromPg(err)).toBe(err);
  });
});
