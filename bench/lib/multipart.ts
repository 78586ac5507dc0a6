/**
 * A form-upload body (docs/development/kodo-protocol.md §4.1) built by hand: fields `token`, `key`, then `file`. Only the bytes
 * around the file are built here, so the file itself can be a buffer or a stream.
 */
export interface MultipartFrame {
  /** `multipart/form-data; boundary=…` */
  contentType: string;
  /** Everything before the file bytes. */
  head: Buffer;
  /** Everything after the file bytes. */
  tail: Buffer;
}

const BOUNDARY = '----granary-bench-4b1d3c9e0f7a';

export function multipartFrame(token: string, key: string): MultipartFrame {
  const crlf = '\r\n';
  const head =
    `--${BOUNDARY}${crlf}Content-Disposition: form-data; name="token"${crlf}${crlf}${token}${crlf}` +
    `--${BOUNDARY}${crlf}Content-Disposition: form-data; name="key"${crlf}${crlf}${key}${crlf}` +
    `--${BOUNDARY}${crlf}Content-Disposition: form-data; name="file"; filename="${key}"${crlf}` +
    `Content-Type: application/octet-stream${crlf}${crlf}`;
  return {
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    head: Buffer.from(head, 'utf8'),
    tail: Buffer.from(`${crlf}--${BOUNDARY}--${crlf}`, 'utf8'),
  };
}
