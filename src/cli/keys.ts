/** `keys show|create|list|delete|rotate-master`: the root key pair, account key pairs, the master key of encryption at rest. */
import type { Command } from 'commander';
import { configFrom, offline, requireDataDir, withDataDir, type Opts } from './context.js';
import { readMasterKeyFile } from '../store/crypto/master-key.js';
import { rotateMasterKey } from '../store/crypto/rotate.js';
import { openStores } from '../store/open.js';

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
  withDataDir(
    keys
      .command('rotate-master')
      .description('re-wrap every encrypted blob\'s data key with a new master key (no data rewritten; resumable; server stopped): docs/reference/encryption.md')
      .requiredOption('--old-key-file <path>', 'the master key the objects are encrypted with now')
      .requiredOption('--new-key-file <path>', 'the new master key (32 random bytes, hex or base64)'),
  ).action(async (opts: Opts) => {
    const config = configFrom(opts);
    await requireDataDir(config);
    const from = await readMasterKeyFile(opts.oldKeyFile!);
    const to = await readMasterKeyFile(opts.newKeyFile!);
    // Opened without the key check (the rotation checks both keys itself) and without the encrypting wrapper.
    const { meta, blobs } = await openStores({ ...config, masterKeyFile: undefined, masterKey: undefined }, undefined, { keyCheck: false });
    try {
      const r = await rotateMasterKey(meta, blobs, from, to);
      process.stdout.write(
        `re-wrapped ${r.files} blob files and ${r.inline} inline blobs (${r.alreadyNew} already under the new key, ${r.unencrypted} not encrypted)\n` +
          `now set GRANARY_MASTER_KEY_FILE=${to.source} and keep the old key file until backups made with it have expired\n`,
      );
    } finally {
      await meta.close();
      await blobs.close?.();
    }
  });
  withDataDir(keys.command('show').description('print the root AccessKey and SecretKey')).action(
    (opts: Opts) =>
      offline(opts, async (g) => {
        process.stdout.write(`AccessKey: ${g.keys.accessKey}\nSecretKey: ${g.keys.secretKey}\n`);
      }),
  );
}
