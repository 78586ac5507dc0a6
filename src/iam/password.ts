/**
 * Sub-user passwords, kept as scrypt hashes (`scrypt$<salt base64>$<hash base64>`, N=16384, r=8, p=1, 32-byte key):
 * the store never holds a password. `checkPassword` is for the console sign-in of sub-users (coming with
 * enforcement, docs/reference/iam.md).
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_BYTES = 32;

function derive(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_BYTES, { N: 16384, r: 8, p: 1 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** The stored form of `password`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64')}$${(await derive(password, salt)).toString('base64')}`;
}

/** Whether `password` is the one `stored` was made from (false for a malformed `stored`). */
export async function checkPassword(password: string, stored: string): Promise<boolean> {
  const [kind, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const want = Buffer.from(hash, 'base64');
  const got = await derive(password, Buffer.from(salt, 'base64'));
  return want.length === got.length && timingSafeEqual(want, got);
}
