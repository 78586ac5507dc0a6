/**
 * What every transfer command shares: the remote profiles and one KodoClient per remote, the reporter, the
 * bandwidth limiter, the concurrency, resume records, include/exclude globs and the download domain override.
 */
import { join } from 'node:path';
import { Minimatch } from 'minimatch';
import { KodoClient } from './client.js';
import { ResumeRecords } from './resume-records.js';
import type { Reporter } from './progress.js';
import { RemoteStore } from './remotes.js';
import type { RateLimiter } from './throttle.js';

/** Include/exclude globs over keys relative to the transfer's root (minimatch; `*.jpg` matches at any depth). */
export class KeyFilter {
  private readonly include: Minimatch[];
  private readonly exclude: Minimatch[];

  constructor(include: string[] = [], exclude: string[] = []) {
    const make = (p: string): Minimatch => new Minimatch(p, { dot: true, matchBase: !p.includes('/') });
    this.include = include.map(make);
    this.exclude = exclude.map(make);
  }

  /** Whether the relative key `rel` is part of the transfer. */
  admits(rel: string): boolean {
    if (this.include.length > 0 && !this.include.some((m) => m.match(rel))) return false;
    return !this.exclude.some((m) => m.match(rel));
  }
}

export interface SessionOptions {
  reporter: Reporter;
  /** Objects in flight (≥ 1). */
  concurrency: number;
  limiter?: RateLimiter;
  filter: KeyFilter;
  domain?: string;
  dryRun?: boolean;
}

export class Session {
  readonly records: ResumeRecords;
  private readonly clients = new Map<string, Promise<KodoClient>>();

  constructor(
    readonly store: RemoteStore,
    readonly opts: SessionOptions,
  ) {
    this.records = new ResumeRecords(join(store.dir, 'records'));
  }

  get reporter(): Reporter {
    return this.opts.reporter;
  }

  /** The client of remote `name` (TransferError when unknown). */
  client(name: string): Promise<KodoClient> {
    let c = this.clients.get(name);
    if (!c) {
      c = this.store.get(name).then((p) => new KodoClient(p));
      this.clients.set(name, c);
    }
    return c;
  }

  /** Names of the known remotes (for parsing `<remote>:<bucket>` arguments). */
  async remoteNames(): Promise<Set<string>> {
    return new Set(Object.keys(await this.store.load()));
  }
}

/** The error text of anything thrown. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
