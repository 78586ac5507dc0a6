/**
 * `granary bucket quota <bucket> [--size <bytes>] [--count <files>]`: with flags, changes the bucket's quota like
 * `setbucketquota` (0 leaves a limit as it is, -1 removes it); then prints the quota and the usage, one line per
 * limit: `size\t<limit bytes, -1 none>\tused <bytes>` and `count\t<limit files, -1 none>\tused <files>`.
 */
import type { Command } from 'commander';
import { parseQuotaValue, quotaOf, setBucketQuota, type QuotaChange } from '../buckets/quota.js';
import { Errors } from '../errors.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `quota` to the `bucket` command. */
export function addQuotaCommand(bucket: Command): void {
  withDataDir(bucket.command('quota <bucket>').description('show or set a bucket quota (bytes, files; 0 = unchanged, -1 = no limit)'))
    .option('--size <bytes>', 'largest total of the entries\' sizes, bytes')
    .option('--count <files>', 'most entries')
    .action((name: string, opts: Opts) =>
      offline(opts, async (g) => {
        const change: QuotaChange = {};
        if (opts.size !== undefined) change.size = parseQuotaValue(opts.size, 'size');
        if (opts.count !== undefined) change.count = parseQuotaValue(opts.count, 'count');
        if (change.size !== undefined || change.count !== undefined) await setBucketQuota(g, name, change);
        const b = await g.meta.getBucket(name);
        const usage = await g.meta.bucketUsage(name);
        if (!b || !usage) throw Errors.noSuchBucket(name);
        const quota = quotaOf(b);
        process.stdout.write(`size\t${quota.size}\tused ${usage.bytes}\ncount\t${quota.count}\tused ${usage.count}\n`);
      }),
    );
}
