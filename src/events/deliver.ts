/**
 * One delivery attempt of an event notification: POST the body to each callback URL of its rule in turn (Kodo:
 * "失败依次重试", the next URL when one fails) through the outbound guard (loopback and private networks refused
 * unless GRANARY_OUTBOUND_ALLOW admits them; redirects not followed), until one answers 2xx.
 *
 * Headers: `Content-Type: application/json`, `Authorization: QBox <AccessKey>:<sign>` with `sign` =
 * urlsafe_b64(HMAC-SHA1(SecretKey, <path>[?<query>] + "\n" + <body>)) — Kodo's callback signature (docs/development/kodo-protocol.md
 * §2.6), which the receiver checks with `qiniu.util.isQiniuCallback(mac, url, body, authorization)` —, `Host`
 * when the rule sets one, `User-Agent: granary-event/1.0`. Each URL attempt is bounded by GRANARY_CALLBACK_TIMEOUT.
 */
import { signCallback } from '../auth/callback-sign.js';
import { JSON_TYPE } from '../auth/headers.js';
import type { Granary } from '../context.js';
import { isOutboundError, outboundRequest, OUTBOUND_ALLOW_SETTING } from '../outbound/client.js';
import type { EventPayload } from './outbox.js';

/** User-Agent of notification requests. */
export const EVENT_USER_AGENT = 'granary-event/1.0';

/**
 * How an attempt ended: `delivered` (a URL answered 2xx; `detail` names it), or not, `permanent` when no URL can
 * ever succeed as configured (each was refused by the guard or is unusable, or the signing key is gone): retrying
 * is pointless then. `detail` says what happened at each URL.
 */
export interface DeliveryOutcome {
  delivered: boolean;
  permanent: boolean;
  detail: string;
}

/** Tries the URLs of `payload` once each. Rejects only when `signal` aborts (shutdown). */
export async function deliverEvent(g: Granary, payload: EventPayload, signal: AbortSignal): Promise<DeliveryOutcome> {
  const secretKey = g.secretOf(payload.accessKey);
  if (secretKey === undefined) {
    return { delivered: false, permanent: true, detail: `no key pair for AccessKey ${payload.accessKey} to sign with` };
  }
  const failures: string[] = [];
  let permanent = true;
  for (const url of payload.urls) {
    signal.throwIfAborted();
    let authorization: string;
    try {
      authorization = signCallback(payload.accessKey, secretKey, url, payload.body, JSON_TYPE);
    } catch {
      failures.push(`${url}: invalid URL`);
      continue;
    }
    const headers: Record<string, string> = {
      'Content-Type': JSON_TYPE,
      Authorization: authorization,
      'User-Agent': EVENT_USER_AGENT,
    };
    if (payload.host) headers.Host = payload.host;
    try {
      const res = await outboundRequest({
        url,
        method: 'POST',
        headers,
        body: payload.body,
        policy: g.outbound,
        timeoutMs: g.config.callbackTimeoutSeconds * 1000,
        maxBodyBytes: 64 * 1024,
        maxRedirects: 0,
        signal,
      });
      if (res.status >= 200 && res.status < 300) return { delivered: true, permanent: false, detail: `delivered to ${url}` };
      failures.push(`${url}: HTTP ${res.status}`);
      permanent = false;
    } catch (err) {
      if (signal.aborted) throw err;
      if (isOutboundError(err) && err.reason === 'forbidden-address') {
        failures.push(`${url}: refused by the outbound guard (allow it with ${OUTBOUND_ALLOW_SETTING})`);
      } else if (isOutboundError(err) && err.reason === 'bad-url') {
        failures.push(`${url}: ${err.message}`);
      } else {
        failures.push(`${url}: ${isOutboundError(err) ? `${err.reason}: ${err.message}` : (err as Error).message}`);
        permanent = false;
      }
    }
  }
  return { delivered: false, permanent, detail: failures.join('; ') };
}
