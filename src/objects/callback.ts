/**
 * The upload callback (docs/development/kodo-protocol.md §4.3, §3.1 `callbackUrl`/`callbackHost`/`callbackBody`/`callbackBodyType`,
 * §2.6 signing): after an object is stored, Granary POSTs the rendered `callbackBody` to the application and
 * relays the application's JSON answer to the uploader. All traffic goes through the guarded outbound client.
 */
import { signCallback } from '../auth/callback-sign.js';
import { Errors } from '../errors.js';
import { outboundRequest, OutboundError } from '../outbound/client.js';
import type { OutboundPolicy } from '../outbound/client.js';

/** User-Agent of callback requests (§2.6). */
export const CALLBACK_USER_AGENT = 'qiniu-callback/1.0';

/** Default `callbackBodyType` (§3.1). */
export const DEFAULT_CALLBACK_BODY_TYPE = 'application/x-www-form-urlencoded';

/** Inputs of one upload callback. */
export interface UploadCallbackOptions {
  /** The policy's `callbackUrl`: one or more absolute http(s) URLs separated by `;`, tried in order. */
  callbackUrl: string;
  /** The policy's `callbackHost`: sent as the `Host` header when given. */
  callbackHost?: string;
  /** The rendered `callbackBody`. */
  body: string;
  /** The policy's `callbackBodyType` (`application/x-www-form-urlencoded` when empty, or `application/json`). */
  bodyType: string;
  /** Access key of the token's owner (signs the request, §2.6). */
  accessKey: string;
  /** Secret key of the token's owner. */
  secretKey: string;
  /** Outbound guard policy (GRANARY_OUTBOUND_ALLOW). */
  policy: OutboundPolicy;
  /** Time limit per URL attempt, milliseconds (connect + answer + body). */
  timeoutMs: number;
  /** Largest accepted application answer, bytes. */
  maxBodyBytes: number;
}

/** A successful callback: the URL that answered, its status (200), parsed JSON answer and raw text. */
export interface UploadCallbackResult {
  url: string;
  status: number;
  json: unknown;
  bodyText: string;
}

/** Splits a `callbackUrl` value on `;` into trimmed, non-empty URLs. */
export function splitCallbackUrls(callbackUrl: string): string[] {
  return callbackUrl
    .split(';')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
}

function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof OutboundError) {
    switch (err.reason) {
      case 'timeout':
        return `timed out after ${timeoutMs} ms`;
      case 'forbidden-address':
        return `refused by the outbound guard: ${err.message.replace(/^outbound request refused: /, '')}`;
      default:
        return err.message;
    }
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs the upload callback (docs/development/kodo-protocol.md §4.3): POSTs `body` to each URL of `callbackUrl` in order with headers
 * `Content-Type: <bodyType>`, `Authorization: QBox <ak>:<sign>` (§2.6, via `signCallback`), `Host:
 * <callbackHost>` when given, and `User-Agent: qiniu-callback/1.0`. Redirects are not followed. The first URL
 * answering status 200 with a JSON-parsable body wins and its answer is returned (to be relayed verbatim to the
 * uploader with 200). Each attempt is bounded by `timeoutMs` (ms) and `maxBodyBytes` (bytes).
 *
 * Throws `Errors.callbackFailed(detail)` (KodoError 579) when no URL is given or every URL fails; `detail` lists
 * each URL with its failure: HTTP status, non-JSON answer, timeout, guard refusal (naming
 * `GRANARY_OUTBOUND_ALLOW`), network error, bad URL. The stored object is kept by the caller in that case.
 */
export async function runUploadCallback(opts: UploadCallbackOptions): Promise<UploadCallbackResult> {
  const urls = splitCallbackUrls(opts.callbackUrl);
  if (urls.length === 0) throw Errors.callbackFailed('no callback URL');
  const bodyType = opts.bodyType.trim() || DEFAULT_CALLBACK_BODY_TYPE;
  const failures: string[] = [];
  for (const url of urls) {
    let authorization: string;
    try {
      authorization = signCallback(opts.accessKey, opts.secretKey, url, opts.body, bodyType);
    } catch {
      failures.push(`${url}: invalid URL`);
      continue;
    }
    const headers: Record<string, string> = {
      'Content-Type': bodyType,
      Authorization: authorization,
      'User-Agent': CALLBACK_USER_AGENT,
    };
    if (opts.callbackHost) headers.Host = opts.callbackHost;
    try {
      const res = await outboundRequest({
        url,
        method: 'POST',
        headers,
        body: opts.body,
        policy: opts.policy,
        timeoutMs: opts.timeoutMs,
        maxBodyBytes: opts.maxBodyBytes,
        maxRedirects: 0,
      });
      const bodyText = res.body.toString('utf8');
      if (res.status !== 200) {
        failures.push(`${url}: HTTP ${res.status}`);
        continue;
      }
      let json: unknown;
      try {
        json = JSON.parse(bodyText);
      } catch {
        failures.push(`${url}: HTTP 200 but the answer is not JSON`);
        continue;
      }
      return { url, status: res.status, json, bodyText };
    } catch (err) {
      failures.push(`${url}: ${describeFailure(err, opts.timeoutMs)}`);
    }
  }
  throw Errors.callbackFailed(failures.join('; '));
}
