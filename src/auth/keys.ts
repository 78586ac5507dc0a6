/**
 * The root key pair (AccessKey/SecretKey). From GRANARY_ACCESS_KEY/GRANARY_SECRET_KEY when set; otherwise generated
 * on first start and kept:
 * - embedded mode (SQLite metadata): in `<dataDir>/credentials.json` (mode 0600);
 * - cluster mode (GRANARY_METADATA=postgres://…): in the shared metadata, setting `root_keys` (JSON
 *   `{"accessKey","secretKey"}`), so every node answers to the same pair. The first node to start generates it
 *   (under the lease `setup:root-keys`, so two nodes starting at once agree); a `credentials.json` found in that
 *   node's data dir (a deployment grown from the embedded mode) is adopted instead of a new pair.
 */
import { randomBytes } from 'node:crypto';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MetadataConfig } from '../config.js';
import type { MetaStore } from '../ports/meta.js';
import { urlsafeB64Encode } from './base64.js';

export interface KeyPair {
  accessKey: string;
  secretKey: string;
}

export type { SecretLookup } from './management.js';

/** Name of the MetaStore setting holding the generated pair in cluster mode. */
export const ROOT_KEYS_SETTING = 'root_keys';

/** Lease serialising the generation of the pair among nodes starting at once. */
const SETUP_LEASE = 'setup:root-keys';
const SETUP_LEASE_MS = 30_000;
/** How long a node waits for another node generating the pair, ms. */
const SETUP_WAIT_MS = 60_000;

/** Path of the generated key file inside the data dir. */
export function credentialsPath(dataDir: string): string {
  return join(dataDir, 'credentials.json');
}

/** A `{accessKey, secretKey}` JSON document, or undefined when `text` is not one. */
function parsePair(text: string): KeyPair | undefined {
  const parsed = JSON.parse(text) as Partial<KeyPair> | null;
  if (parsed && typeof parsed.accessKey === 'string' && typeof parsed.secretKey === 'string') {
    return { accessKey: parsed.accessKey, secretKey: parsed.secretKey };
  }
  return undefined;
}

/**
 * Reads the key pair kept in the data dir; undefined when there is no file. A file that cannot be read, is not
 * JSON, or holds no `accessKey`/`secretKey` strings is refused (an Error naming the file and the reason): it is
 * never replaced by a new pair, which would lock out whoever holds the old one.
 */
export async function readStoredKeys(dataDir: string): Promise<KeyPair | undefined> {
  const path = credentialsPath(dataDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the root key pair in ${path}: ${(err as Error).message}`, { cause: err });
  }
  let pair: KeyPair | undefined;
  try {
    pair = parsePair(text);
  } catch (err) {
    throw new Error(`${path} is not valid JSON (${(err as Error).message}): fix it, or remove it to have a new root key pair generated`, { cause: err });
  }
  if (!pair) {
    throw new Error(`${path} holds no root key pair ("accessKey" and "secretKey" strings): fix it, or remove it to have a new root key pair generated`);
  }
  return pair;
}

function generatePair(): KeyPair {
  return { accessKey: urlsafeB64Encode(randomBytes(30)), secretKey: urlsafeB64Encode(randomBytes(30)) };
}

/** Where a generated pair is kept (for the message printed once). */
export function rootKeysLocation(config: { dataDir: string; metadata: MetadataConfig }): string {
  return config.metadata.kind === 'postgres' ? `the PostgreSQL metadata, setting ${ROOT_KEYS_SETTING}` : credentialsPath(config.dataDir);
}

/**
 * The root key pair of this start, resolved but perhaps not yet kept. `created`: it was generated now (the caller
 * prints it once, after `persist`). `persist()` keeps a generated pair (credentials.json, or the shared metadata in
 * cluster mode); `abandon()` drops it instead (the start failed: nothing was written, nothing is to print). Both are
 * no-ops for a pair that was already kept or came from the environment; call exactly one of them.
 */
export interface RootKeys {
  keys: KeyPair;
  created: boolean;
  persist(): Promise<void>;
  abandon(): Promise<void>;
}

const kept = (keys: KeyPair): RootKeys => ({ keys, created: false, persist: async () => undefined, abandon: async () => undefined });

/**
 * Resolves the root key pair without keeping a generated one yet (see `RootKeys`): a server generates it in memory,
 * listens, and keeps it only once its listeners are up, so a start that fails leaves no pair behind that nobody saw.
 * `meta` is the opened MetaStore (cluster mode only: the generating node holds the lease `setup:root-keys` from here
 * to `persist`/`abandon`, so nodes starting at once still agree on one pair). Throws when credentials.json is
 * unusable (readStoredKeys) or another node holds the setup lease for over a minute without storing a pair.
 */
export async function resolveRootKeys(
  config: { dataDir: string; metadata: MetadataConfig },
  fromEnv: Partial<KeyPair>,
  meta: MetaStore,
): Promise<RootKeys> {
  if (fromEnv.accessKey && fromEnv.secretKey) return kept({ accessKey: fromEnv.accessKey, secretKey: fromEnv.secretKey });
  if (config.metadata.kind === 'postgres') return sharedRootKeys(config.dataDir, meta);
  const stored = await readStoredKeys(config.dataDir);
  if (stored) return kept(stored);
  const keys = generatePair();
  const path = credentialsPath(config.dataDir);
  return {
    keys,
    created: true,
    persist: async () => {
      // Never over a pair another process (an offline CLI command) kept meanwhile: link fails on an existing file.
      await writeFile(`${path}.tmp`, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
      try {
        await link(`${path}.tmp`, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${path} was created by another process during this start: start again to use it`, { cause: err });
        throw err;
      } finally {
        await unlink(`${path}.tmp`).catch(() => undefined);
      }
    },
    abandon: async () => undefined,
  };
}

/**
 * Resolves and keeps the root key pair at once (the worker primary, the CLI's offline commands): `created` is true
 * when a new pair was generated and kept (the caller prints it once).
 */
export async function loadRootKeys(
  config: { dataDir: string; metadata: MetadataConfig },
  fromEnv: Partial<KeyPair>,
  meta: MetaStore,
): Promise<{ keys: KeyPair; created: boolean }> {
  const r = await resolveRootKeys(config, fromEnv, meta);
  await r.persist();
  return { keys: r.keys, created: r.created };
}

/**
 * The pair kept in the shared metadata; when there is none, this node takes the setup lease and generates it (or
 * adopts its data dir's credentials.json), keeping the lease (renewed) until `persist` stores it or `abandon` lets
 * another node generate one.
 */
async function sharedRootKeys(dataDir: string, meta: MetaStore): Promise<RootKeys> {
  const read = async (): Promise<KeyPair | undefined> => {
    const text = await meta.getSetting(ROOT_KEYS_SETTING);
    return text === undefined ? undefined : parsePair(text);
  };
  const deadline = Date.now() + SETUP_WAIT_MS;
  for (;;) {
    const stored = await read();
    if (stored) return kept(stored);
    if (await meta.leases.acquire(SETUP_LEASE, meta.owner, SETUP_LEASE_MS, Date.now())) {
      let done = false;
      const release = async (): Promise<void> => {
        done = true;
        clearInterval(renewal);
        await meta.leases.release(SETUP_LEASE, meta.owner);
      };
      const renewal = setInterval(() => {
        if (!done) void meta.leases.renew(SETUP_LEASE, meta.owner, SETUP_LEASE_MS, Date.now()).catch(() => undefined);
      }, SETUP_LEASE_MS / 3);
      renewal.unref();
      try {
        // Read again under the lease: a node that held it before may have stored a pair meanwhile.
        const again = await read();
        if (again) {
          await release();
          return kept(again);
        }
        const adopted = await readStoredKeys(dataDir);
        const keys = adopted ?? generatePair();
        return {
          keys,
          created: adopted === undefined,
          persist: async () => {
            try {
              await meta.setSetting(ROOT_KEYS_SETTING, JSON.stringify(keys));
            } finally {
              await release();
            }
          },
          abandon: release,
        };
      } catch (err) {
        await release().catch(() => undefined);
        throw err;
      }
    }
    if (Date.now() > deadline) throw new Error(`another node holds ${SETUP_LEASE} but stored no root key pair within ${SETUP_WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
