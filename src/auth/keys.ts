/**
 * The root key pair (AccessKey/SecretKey). From GRANARY_ACCESS_KEY/GRANARY_SECRET_KEY when set; otherwise
 * generated on first start and kept in `<dataDir>/credentials.json` (mode 0600).
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { urlsafeB64Encode } from './base64.js';

export interface KeyPair {
  accessKey: string;
  secretKey: string;
}

export type { SecretLookup } from './management.js';

/** Path of the generated key file inside the data dir. */
export function credentialsPath(dataDir: string): string {
  return join(dataDir, 'credentials.json');
}

/** Reads the key pair kept in the data dir, if any. */
export async function readStoredKeys(dataDir: string): Promise<KeyPair | undefined> {
  try {
    const parsed = JSON.parse(await readFile(credentialsPath(dataDir), 'utf8')) as Partial<KeyPair>;
    if (typeof parsed.accessKey === 'string' && typeof parsed.secretKey === 'string') {
      return { accessKey: parsed.accessKey, secretKey: parsed.secretKey };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return undefined;
}

/**
 * Resolves the root key pair. `created` is true when a new pair was generated (the caller prints it once).
 */
export async function loadRootKeys(
  dataDir: string,
  fromEnv: Partial<KeyPair>,
): Promise<{ keys: KeyPair; created: boolean }> {
  if (fromEnv.accessKey && fromEnv.secretKey) {
    return { keys: { accessKey: fromEnv.accessKey, secretKey: fromEnv.secretKey }, created: false };
  }
  const stored = await readStoredKeys(dataDir);
  if (stored) return { keys: stored, created: false };
  const keys: KeyPair = {
    accessKey: urlsafeB64Encode(randomBytes(30)),
    secretKey: urlsafeB64Encode(randomBytes(30)),
  };
  const path = credentialsPath(dataDir);
  await writeFile(`${path}.tmp`, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  await rename(`${path}.tmp`, path);
  return { keys, created: true };
}
