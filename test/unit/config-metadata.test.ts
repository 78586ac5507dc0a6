/** GRANARY_METADATA: the embedded SQLite by default, a postgres:// URL for cluster mode, a clear error otherwise; the pool settings. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const metadata = (value?: string) => loadConfig(value === undefined ? {} : { GRANARY_METADATA: value }).metadata;

describe('GRANARY_METADATA', () => {
  it('unset or empty: SQLite in the data dir', () => {
    expect(metadata()).toEqual({ kind: 'sqlite' });
    expect(metadata('')).toEqual({ kind: 'sqlite' });
  });

  it('postgres:// and postgresql:// URLs: PostgreSQL, the URL kept as given', () => {
    expect(metadata('postgres://u:p@db.example:5432/granary')).toEqual({ kind: 'postgres', url: 'postgres://u:p@db.example:5432/granary' });
    expect(metadata('postgresql://db/granary?sslmode=require')).toEqual({ kind: 'postgres', url: 'postgresql://db/granary?sslmode=require' });
    expect(metadata('POSTGRES://db/granary').kind).toBe('postgres');
  });

  it('anything else fails the start with a message naming the variable, never echoing the value', () => {
    expect(() => metadata('mysql://u:secret@db/granary')).toThrow(/GRANARY_METADATA must be .*postgres:\/\/.*got the scheme "mysql:"/);
    expect(() => metadata('mysql://u:secret@db/granary')).not.toThrow(/secret/);
    expect(() => metadata('/var/lib/granary/meta.db')).toThrow(/GRANARY_METADATA .*no URL scheme/);
    expect(() => metadata('sqlite:meta.db')).toThrow(/GRANARY_METADATA/);
    expect(() => metadata('postgres://u:secret@[bad/granary')).toThrow(/GRANARY_METADATA .*not a valid URL/);
    expect(() => metadata('postgres://u:secret@[bad/granary')).not.toThrow(/secret/);
  });
});

describe('GRANARY_PG_POOL and GRANARY_PG_TIMEOUT', () => {
  it('default to 16 connections and 30 seconds; take integers in range; refuse anything else by name', () => {
    expect(loadConfig({})).toMatchObject({ pgPool: 16, pgTimeoutSeconds: 30 });
    expect(loadConfig({ GRANARY_PG_POOL: '4', GRANARY_PG_TIMEOUT: '2' })).toMatchObject({ pgPool: 4, pgTimeoutSeconds: 2 });
    expect(() => loadConfig({ GRANARY_PG_POOL: '0' })).toThrow(/GRANARY_PG_POOL must be an integer between 1 and 1000/);
    expect(() => loadConfig({ GRANARY_PG_TIMEOUT: '1.5' })).toThrow(/GRANARY_PG_TIMEOUT must be an integer between 1 and 3600/);
  });
});
