/**
 * Every key pair Granary accepts: the root pair (config or data dir), account pairs kept in the MetaStore
 * (created with `granary keys create`) and the enabled key pairs of enabled IAM sub-users (iam/principals.ts).
 * Signature checks look secrets up synchronously, so the pairs are held in memory: loaded at start, reloaded after
 * a change made by this process and when the store's `access_keys` or `iam` change counter moves (polled every
 * 250 ms, ports/reloading.ts; the counters are bumped in the same transaction as the change): a pair created,
 * disabled or deleted through another worker process, another cluster node or the CLI is seen within about
 * 250 ms, well within a second.
 *
 * Fail closed: when this process could not read the counters for `STALE_MS` (a metadata outage), a sub-user key's
 * lookup throws 503 `iamUnavailable` instead of answering from data that may be stale (a disabled key, a removed
 * right); the root and account keys keep working.
 */
import { randomBytes } from 'node:crypto';
import { ReloadingView } from '../ports/reloading.js';
import type { MetaStore } from '../ports/meta.js';
import { Errors } from '../errors.js';
import type { Principal } from '../iam/evaluate.js';
import { subUserKeys, type SubUserKey } from '../iam/principals.js';
import { urlsafeB64Encode } from './base64.js';
import type { KeyPair } from './keys.js';
import type { SecretLookup } from './management.js';

/** How long the view may go without reading the change counters before sub-user keys are refused (503), ms. */
export const STALE_MS = 3000;
const POLL_MS = 250;

const ROOT: Principal = { kind: 'root' };

export class KeyIndex extends ReloadingView {
  private accounts = new Map<string, string>();
  private owners = new Map<string, Principal>();
  private subUsers = new Map<string, SubUserKey>();

  constructor(
    private readonly meta: MetaStore,
    readonly root: KeyPair,
  ) {
    // Both counters only grow, so their sum moves whenever either does.
    super(async () => (await meta.changeCount('access_keys')) + (await meta.changeCount('iam')), POLL_MS);
  }

  async reload(): Promise<void> {
    const next = new Map<string, string>();
    for (const k of await this.meta.listAccessKeys()) next.set(k.accessKey, k.secretKey);
    const subs = subUserKeys(await this.meta.iam.enforcementSnapshot());
    this.accounts = next;
    this.owners = new Map([...next.keys()].map((ak) => [ak, { kind: 'owner', owner: ak }]));
    // A sub-user of an account whose key is gone acts nowhere.
    for (const [ak, sub] of subs) if (sub.account !== this.root.accessKey && !next.has(sub.account)) subs.delete(ak);
    this.subUsers = subs;
    this.syncedMs = Date.now();
  }

  /** The sub-user entry of an AccessKey; 503 `iamUnavailable` when the view is stale (see the module comment). */
  private subUser(accessKey: string): SubUserKey | undefined {
    const sub = this.subUsers.get(accessKey);
    if (sub && this.polls && Date.now() - this.syncedMs > STALE_MS) throw Errors.iamUnavailable(`IAM data not read for ${Date.now() - this.syncedMs} ms`);
    return sub;
  }

  /** SecretKey of an AccessKey (root, account or enabled sub-user key), or undefined. */
  readonly secretOf: SecretLookup = (accessKey) =>
    accessKey === this.root.accessKey ? this.root.secretKey : (this.accounts.get(accessKey) ?? this.subUser(accessKey)?.secretKey);

  /**
   * Who an AccessKey is: the root key, an account owner, or a sub-user with its policies (evaluate.ts); undefined
   * for a key not known (or disabled). 503 `iamUnavailable` for a sub-user key while the view is stale.
   */
  principalOf(accessKey: string): Principal | undefined {
    if (accessKey === this.root.accessKey) return ROOT;
    return this.owners.get(accessKey) ?? this.subUser(accessKey)?.principal;
  }

  /** The AccessKey of the account a key acts in: itself for the root and account keys, the owner's for a sub-user. */
  accountOf(accessKey: string): string | undefined {
    if (accessKey === this.root.accessKey || this.accounts.has(accessKey)) return accessKey;
    return this.subUser(accessKey)?.account;
  }

  /** The uid (Kodo `iuid`) of a sub-user's key, or undefined. */
  iuidOf(accessKey: string): number | undefined {
    return this.subUsers.get(accessKey)?.iuid;
  }

  /** Whether `accessKey` is the root key or an account's key (not a sub-user's, not an unknown or disabled one). */
  isAccountKey(accessKey: string): boolean {
    return accessKey === this.root.accessKey || this.accounts.has(accessKey);
  }

  /** Whether `accessKey` is a sub-user's key. */
  isSubUser(accessKey: string): boolean {
    return this.subUsers.has(accessKey);
  }

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
