/**
 * Errors of the transfer CLI. They are client-side (the server's own catalogue is src/errors.ts): a TransferError
 * is printed as one line by the CLI (`granary: <message>`) with exit code 1, never with a stack.
 */

/** A failure to report to the user as is. `status`: the Kodo status code that caused it, when one did. */
export class TransferError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'TransferError';
  }
}

/** A one-line explanation of a Kodo error answer (docs/development/kodo-protocol.md §8.7) for `what` (e.g. `remote qiniu, bucket photos`). */
export function describeStatus(status: number, body: string, what: string): string {
  let detail = body.trim();
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === 'string') detail = parsed.error;
  } catch {
    // not JSON: keep the text
  }
  detail = detail.replace(/\s+/g, ' ').slice(0, 200);
  switch (status) {
    case 401:
      return `${what}: the AccessKey/SecretKey were refused (401 ${detail || 'bad token'})`;
    case 403:
      return `${what}: forbidden (403 ${detail})`;
    case 612:
      return `${what}: no such file (612)`;
    case 631:
      return `${what}: no such bucket (631)`;
    default:
      return `${what}: ${status} ${detail}`;
  }
}
