/**
 * Every key pair Granary accepts: the root pair (config or data dir) plus account pairs kept in the MetaStore
 * (created with `granary keys create`). Signature checks look secrets up synchronously, so the account pairs
 * are held in memory: loaded at start, reloaded after a change made by this process and when the store's
 * `access_keys` change counter moves (ports/reloading.ts): pairs created through another worker process or by the
 * CLI are accepted within about half a second.
 */
import { randomBytes } from 'node:crypto';
import { ReloadingView } from '../ports/reloading.js';
import type { MetaStore } from '../ports/meta.js';
import { urlsafeB64Encode } from './base64.js';
import type { KeyPair } from './keys.js';
import type { SecretLookup } from './management.js';

export class KeyIndex extends ReloadingView {
  private accounts = new Map<string, string>();

  constructor(
    private readonly meta: MetaStore,
    readonly root: KeyPair,
  ) {
    super(() => meta.changeCount('access_keys'));
  }

  async reload(): Promise<void> {
    const next = new Map<string, string>();
    for (const k of await this.meta.listAccessKeys()) next.set(k.accessKey, k.secretKey);
    this.accounts = next;
  }

  /** SecretKey of an AccessKey (root or account), or undefined. */
  readonly secretOf: SecretLookup = (accessKey) =>
    accessKey === this.root.accessKey ? this.root.secretKey : this.accounts.get(accessKey);

  /** Whether `accessKey` is the root key (which may act on every bucket). */
  isRoot(accessKey: string): boolean {
    return accessKey === this.root.accessKey;
  }

  /** The key pair of an AccessKey, or undefined. */
  pairOf(accessKey: string): KeyPair | undefined {
    const secretKey = this.secretOf(accessKey);
    return secretKey === undefined ? undefined : { accessKey, secretKey };
  }

  /** Creates and stores a new account key pair (40 URL-safe characters each). */
  async create(nowSec: number): Promise<KeyPair> {
    const pair = { accessKey: urlsafeB64Encode(randomBytes(30)), secretKey: urlsafeB64Encode(randomBytes(30)) };
    await this.meta.createAccessKey({ ...pair, ctime: nowSec });
    await this.reload();
    return pair;
  }
}
