/**
 * The master key of encryption at rest (GRANARY_MASTER_KEY_FILE, or GRANARY_MASTER_KEY holding the key itself;
 * docs/reference/encryption.md): 32 random bytes, written as 64 hex characters or as base64 (surrounding white space
 * ignored). It wraps every blob's data
 * key (store/crypto/envelope.ts); it is never stored by Granary, only its id (`masterKeyId`, 8 bytes of a hash) in
 * the metadata setting `master_key_id`, so a start with a missing or different key is refused before anything is
 * served: `checkMasterKey`.
 */
import { readFile } from 'node:fs/promises';
import type { MetaStore } from '../../ports/meta.js';
import { type MasterKey, masterKeyId } from './envelope.js';

/** The metadata setting holding the id (16 hex) of the master key the deployment's blobs are encrypted with. */
export const MASTER_KEY_SETTING = 'master_key_id';

/**
 * The metadata setting `<old id>><new id>` while a master-key rotation is under way (store/crypto/rotate.ts; '' or
 * absent otherwise): a start is refused until it is finished.
 */
export const ROTATION_SETTING = 'master_key_rotation';

/** A start refused over the master key (exit 1, the message names the file). */
export class MasterKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MasterKeyError';
  }
}

/** Parses a key file's text: 64 hex characters or base64 of 32 bytes; undefined when it is neither. */
export function parseMasterKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === 32) return b;
  }
  return undefined;
}

/** Reads a master key file. Throws MasterKeyError naming `path` when it cannot be read or holds no key. */
export async function readMasterKeyFile(path: string): Promise<MasterKey> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new MasterKeyError(`cannot read the master key file ${path} (GRANARY_MASTER_KEY_FILE): ${(err as Error).message}`);
  }
  const key = parseMasterKey(text);
  if (!key) throw new MasterKeyError(`the master key file ${path} must hold 32 bytes as 64 hex characters or base64 (e.g. \`openssl rand -hex 32\`)`);
  return { key, id: masterKeyId(key), source: path };
}

/** Where the master key is configured: GRANARY_MASTER_KEY_FILE and GRANARY_MASTER_KEY (the key's text). */
export interface MasterKeyConfig {
  masterKeyFile?: string | undefined;
  masterKey?: string | undefined;
}

/** The name of the key's source for messages: the file's path, or `GRANARY_MASTER_KEY`; undefined when unset. */
export function masterKeySource(config: MasterKeyConfig): string | undefined {
  return config.masterKeyFile ?? (config.masterKey !== undefined ? 'GRANARY_MASTER_KEY' : undefined);
}

/**
 * The configured master key, or undefined when encryption is off. Throws MasterKeyError when both variables are
 * set, when the file cannot be read or holds no key, or when GRANARY_MASTER_KEY is not 32 bytes as 64 hex
 * characters or base64 (the message never repeats the value).
 */
export async function readMasterKey(config: MasterKeyConfig): Promise<MasterKey | undefined> {
  if (config.masterKeyFile !== undefined && config.masterKey !== undefined) {
    throw new MasterKeyError('both GRANARY_MASTER_KEY_FILE and GRANARY_MASTER_KEY are set: set only one (the file is preferred)');
  }
  if (config.masterKeyFile !== undefined) return readMasterKeyFile(config.masterKeyFile);
  if (config.masterKey === undefined) return undefined;
  const key = parseMasterKey(config.masterKey);
  if (!key) throw new MasterKeyError('GRANARY_MASTER_KEY must hold 32 bytes as 64 hex characters or base64 (e.g. `openssl rand -hex 32`)');
  return { key, id: masterKeyId(key), source: 'GRANARY_MASTER_KEY' };
}

/**
 * Checks the configured master key against the one the deployment's blobs are encrypted with, before anything is
 * served (store/open.ts). `master` undefined: encryption is off. Throws MasterKeyError when encrypted blobs may exist
 * and no key or another key is configured; records the key's id at its first use.
 */
export async function checkMasterKey(meta: Pick<MetaStore, 'getSetting' | 'claimSetting'>, master: MasterKey | undefined, file: string | undefined): Promise<void> {
  const recorded = await meta.getSetting(MASTER_KEY_SETTING);
  const rotation = (await meta.getSetting(ROTATION_SETTING)) ?? '';
  if (rotation !== '') {
    throw new MasterKeyError(
      `a master key rotation (${rotation.replace('>', ' → ')}) is unfinished: run \`granary keys rotate-master\` again with the same ` +
        'old and new key files before starting; nothing was served',
    );
  }
  if (!master) {
    if (recorded !== undefined) {
      throw new MasterKeyError(
        `this deployment's objects are encrypted (master key id ${recorded}) but GRANARY_MASTER_KEY_FILE is not set: ` +
          'set it to the file holding that key; nothing was served',
      );
    }
    return;
  }
  const id = master.id.toString('hex');
  const agreed = recorded ?? (await meta.claimSetting(MASTER_KEY_SETTING, id));
  if (agreed !== id) {
    throw new MasterKeyError(
      `the master key in ${file ?? master.source} (id ${id}) is not the key this deployment's objects are encrypted with ` +
        `(id ${agreed}): give the right key in GRANARY_MASTER_KEY_FILE or GRANARY_MASTER_KEY (after a rotation, the new key); nothing was served`,
    );
  }
}
