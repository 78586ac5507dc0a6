/**
 * Job notification (docs/development/kodo-protocol.md §9.3): when a job's items are final, its prefop record is POSTed as
 * `Content-Type: application/json` to the notify URL through the outbound guard (loopback and private networks
 * refused unless GRANARY_OUTBOUND_ALLOW admits them; redirects not followed). Any 2xx answer succeeds. Up to
 * GRANARY_NOTIFY_ATTEMPTS attempts, waiting GRANARY_NOTIFY_RETRY_MS before the second and doubling after that;
 * each attempt is bounded by GRANARY_CALLBACK_TIMEOUT.
 */
import { backoffMs } from '../backoff.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Granary } from '../context.js';
import { isOutboundError, outboundRequest } from '../outbound/client.js';

/** User-Agent of notify requests. */
export const NOTIFY_USER_AGENT = 'granary-pfop-notify/1.0';

/**
 * POSTs `body` (JSON text) to `url` with retries. Resolves with undefined on success, else with the last failure
 * (text). Rejects only when `signal` aborts (shutdown) — the job is then notified again at the next start.
 */
export async function notifyJob(g: Granary, url: string, body: string, signal: AbortSignal): Promise<string | undefined> {
  let failure = '';
  for (let attempt = 1; attempt <= g.config.notifyAttempts; attempt++) {
    if (attempt > 1) await sleep(backoffMs({ firstMs: g.config.notifyRetryMs }, attempt - 1), undefined, { signal });
    signal.throwIfAborted();
    try {
      const res = await outboundRequest({
        url,
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'User-Agent': NOTIFY_USER_AGENT },
        body,
        policy: g.outbound,
        timeoutMs: g.config.callbackTimeoutSeconds * 1000,
        maxBodyBytes: 64 * 1024,
        maxRedirects: 0,
      });
      if (res.status >= 200 && res.status < 300) return undefined;
      failure = `HTTP ${res.status}`;
    } catch (err) {
      failure = isOutboundError(err) ? `${err.reason}: ${err.message}` : (err as Error).message;
    }
    g.log.info({ url, attempt, failure }, 'pfop notify failed');
  }
  return failure;
}
