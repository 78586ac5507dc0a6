/**
 * The error type of every outbound (server → third party) HTTP request Granary makes: upload callbacks
 * (docs/development/kodo-protocol.md §4.3, §2.6), fetch and mirror (§8.5), persistent-ops notifications (§9.3),
 * bucket event notifications and remote watermark images (§10.5).
 */

/** Name of the environment setting that opens exceptions in the outbound address guard (see guard.ts). */
export const OUTBOUND_ALLOW_SETTING = 'GRANARY_OUTBOUND_ALLOW';

/**
 * Why an outbound request failed:
 * - `forbidden-address`: the target resolved to (or was) a loopback/private/link-local/metadata/... address
 *   that is not exempted by `GRANARY_OUTBOUND_ALLOW`;
 * - `bad-url`: not an absolute `http:`/`https:` URL (also a bad redirect `Location`);
 * - `timeout`: the total time limit elapsed (connect + response + body);
 * - `too-large`: the response body is over the byte limit;
 * - `network`: DNS failure, connection refused/reset, TLS error, truncated body;
 * - `too-many-redirects`: more redirects than allowed;
 * - `aborted`: the caller's abort signal fired (its own deadline or a shutdown).
 */
export type OutboundErrorReason =
  | 'forbidden-address'
  | 'bad-url'
  | 'timeout'
  | 'too-large'
  | 'network'
  | 'too-many-redirects'
  | 'aborted';

/** A failed outbound request; `reason` is stable for code, `message` is for humans (and error details). */
export class OutboundError extends Error {
  /** Machine-readable failure class. */
  readonly reason: OutboundErrorReason;

  constructor(reason: OutboundErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundError';
    this.reason = reason;
  }
}

/** Narrows an unknown thrown value to an OutboundError. */
export function isOutboundError(err: unknown): err is OutboundError {
  return err instanceof OutboundError;
}
