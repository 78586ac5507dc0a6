/** Request header helpers of the S3 operations. */
import { S3Errors } from './errors.js';
import type { S3Request } from './types.js';

/** A header's value (repeats joined by `,`), or undefined when absent. */
export function headerOf(req: Pick<S3Request, 'headers'>, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** The hex MD5 a `Content-MD5` header names, or undefined when absent; InvalidDigest when malformed. */
export function contentMd5Of(req: Pick<S3Request, 'headers'>): string | undefined {
  const v = req.headers['content-md5'];
  if (v === undefined) return undefined;
  const bytes = Buffer.from(String(v), 'base64');
  if (bytes.length !== 16 || bytes.toString('base64') !== String(v).trim()) throw S3Errors.InvalidDigest();
  return bytes.toString('hex');
}
