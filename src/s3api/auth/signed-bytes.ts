/**
 * The bytes a client may have signed for a canonical text built from Node's view of the request. Node reads header
 * values (and the raw request target) as latin1: one character per byte as sent. Clients differ on non-ASCII header
 * values such as `x-amz-meta-*` (docs/reference/s3-compatibility.md, "Objects"):
 *
 * - botocore and the Go SDK send UTF-8 bytes and sign those same bytes — the raw bytes (latin1 of Node's string),
 *   which is what S3 signs too;
 * - the AWS SDK for JavaScript signs the UTF-8 of its string but Node's HTTP client sends one latin1 byte per
 *   character — the UTF-8 of Node's string.
 *
 * Both are tried (raw bytes first); an ASCII text has one form.
 */
export function signedBytesCandidates(text: string): Buffer[] {
  const utf8 = Buffer.from(text, 'utf8');
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text) || /[^\x00-\xff]/.test(text)) return [utf8];
  return [Buffer.from(text, 'latin1'), utf8];
}
