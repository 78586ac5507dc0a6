/** `keys show|create|list|delete`: the root key pair and account key pairs. */
import type { Command } from 'commander';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `keys …`. */
export function addKeyCommands(program: Command): void {
  const keys = program.command('keys').description('key pairs: the root pair and account pairs');
  withDataDir(keys.command('create').description('create an account key pair (it may act only on its own buckets)')).action(
    (opts: Opts) =>
      offline(opts, async (g) => {
        const pair = await g.keyIndex.create(Math.floor(Date.now() / 1000));
        process.stdout.write(`AccessKey: ${pair.accessKey}\nSecretKey: ${pair.secretKey}\n`);
      }),
  );
  withDataDir(keys.command('list').description('list account AccessKeys')).action((opts: Opts) =>
    offline(opts, async (g) => {
      process.stdout.write(`${g.keys.accessKey}\troot\n`);
      for (const k of await g.meta.listAccessKeys()) process.stdout.write(`${k.accessKey}\taccount\n`);
    }),
  );
  withDataDir(keys.command('delete <ak>').description('delete an account key pair')).action(
    (ak: string, opts: Opts) =>
      offline(opts, async (g) => {
        if (!(await g.meta.deleteAccessKey(ak))) throw new Error(`no account key ${ak}`);
        // The account's IAM sub-users, their key pairs, groups and policies go with it (docs/reference/iam.md).
        await g.meta.iam.deleteOwner(ak);
        process.stdout.write(`deleted key ${ak}\n`);
      }),
  );
  withDataDir(keys.command('show').description('print the root AccessKey and SecretKey')).action(
    (opts: Opts) =>
      offline(opts, async (g) => {
        process.stdout.write(`AccessKey: ${g.keys.accessKey}\nSecretKey: ${g.keys.secretKey}\n`);
      }),
  );
}
