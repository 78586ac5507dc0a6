/** Bucket and domain commands: `bucket create|list|delete|nrop|style|unstyle|separator|styles`, `domain bind|list`. */
import type { Command } from 'commander';
import { bindDomain, createBucket, dropBucket, setBucketNrop, setBucketPrivate } from '../buckets/buckets.js';
import { removeStyle, setSeparator, setStyle, stylesOf } from '../buckets/styles.js';
import { Errors } from '../errors.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `bucket …` and `domain …`; returns the `bucket` command (settings modules add their subcommands to it). */
export function addBucketCommands(program: Command): Command {
  const bucket = program.command('bucket').description('manage buckets');
  withDataDir(bucket.command('create <name>').description('create a bucket'))
    .option('--region <id>', 'region id (default GRANARY_REGION or z0)')
    .option('--private', 'make the bucket private')
    .option('--owner <ak>', "AccessKey of the owning account (default: the root key's)")
    .action((name: string, opts: Opts & { private?: boolean }) =>
      offline(opts, async (g) => {
        const owner = opts.owner ?? g.keys.accessKey;
        if (!g.keyIndex.pairOf(owner)) throw new Error(`unknown AccessKey ${owner}`);
        await createBucket(g, name, owner, opts.region);
        if (opts.private) await setBucketPrivate(g, name, true);
        process.stdout.write(`created bucket ${name}${opts.private ? ' (private)' : ''}\n`);
      }),
    );
  withDataDir(bucket.command('list').description('list buckets: name, region, access, owner, files, bytes')).action((opts: Opts) =>
    offline(opts, async (g) => {
      for (const b of await g.meta.listBuckets()) {
        const owner = b.owner === g.keys.accessKey ? 'root' : b.owner;
        const usage = (await g.meta.bucketUsage(b.name)) ?? { bytes: 0, count: 0 };
        process.stdout.write(
          `${b.name}\t${b.region}\t${b.private ? 'private' : 'public'}\t${owner}\t${usage.count} files\t${usage.bytes} bytes\n`,
        );
      }
    }),
  );
  withDataDir(bucket.command('delete <name>').description('delete an empty bucket')).action(
    (name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await dropBucket(g, name);
        process.stdout.write(`deleted bucket ${name}\n`);
      }),
  );
  withDataDir(bucket.command('nrop <name> <on|off>').description('enable or disable the nrop moderation fop for a bucket')).action(
    (name: string, state: string, opts: Opts) =>
      offline(opts, async (g) => {
        if (state !== 'on' && state !== 'off') throw new Error(`expected on or off, got ${JSON.stringify(state)}`);
        await setBucketNrop(g, name, state === 'on');
        process.stdout.write(`nrop ${state === 'on' ? 'enabled' : 'disabled'} for bucket ${name}\n`);
      }),
  );

  withDataDir(bucket.command('style <bucket> <name> <fop>').description('set an image style: <key><sep><name> serves <fop> on <key>')).action(
    (bucketName: string, name: string, fop: string, opts: Opts) =>
      offline(opts, async (g) => {
        await setStyle(g, bucketName, name, fop);
        process.stdout.write(`style ${name} of bucket ${bucketName}: ${fop}\n`);
      }),
  );
  withDataDir(bucket.command('unstyle <bucket> <name>').description('remove an image style')).action(
    (bucketName: string, name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await removeStyle(g, bucketName, name);
        process.stdout.write(`removed style ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(bucket.command('separator <bucket> <sep>').description('set the style separators (default -; several allowed: granary bucket separator [options] <bucket> -- -_!)')).action(
    (bucketName: string, sep: string, opts: Opts) =>
      offline(opts, async (g) => {
        await setSeparator(g, bucketName, sep);
        process.stdout.write(`style separators of bucket ${bucketName}: ${sep}\n`);
      }),
  );
  withDataDir(bucket.command('styles <bucket>').description('list image styles: separators, then <name>\t<fop> lines')).action(
    (bucketName: string, opts: Opts) =>
      offline(opts, async (g) => {
        const b = await g.meta.getBucket(bucketName);
        if (!b) throw Errors.noSuchBucket(bucketName);
        const st = stylesOf(b);
        process.stdout.write(`separator\t${st.separator}\n`);
        for (const [name, fop] of Object.entries(st.styles).sort(([a], [b2]) => (a < b2 ? -1 : 1))) process.stdout.write(`${name}\t${fop}\n`);
      }),
  );


  const domain = program.command('domain').description('manage download domains');
  withDataDir(domain.command('bind <domain> <bucket>').description('serve <bucket> at http://<domain>/<key>')).action(
    (name: string, bucketName: string, opts: Opts) =>
      offline(opts, async (g) => {
        const d = await bindDomain(g, name, bucketName);
        process.stdout.write(`bound ${d.domain} to bucket ${bucketName}\n`);
      }),
  );
  withDataDir(domain.command('list <bucket>').description('list domains bound to a bucket')).action(
    (bucketName: string, opts: Opts) =>
      offline(opts, async (g) => {
        for (const d of await g.meta.domainsOf(bucketName)) process.stdout.write(`${d.domain}\n`);
      }),
  );

  return bucket;
}
