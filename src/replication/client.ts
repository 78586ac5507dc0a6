/**
 * The S3 client of a replication target (ports/replication.ts): AWS SDK v3 on HTTP agents whose DNS lookup is the
 * outbound guard's (outbound/client.ts `guardedLookup`), so a destination on a loopback, private or metadata
 * address is refused unless GRANARY_OUTBOUND_ALLOW admits it (outbound/guard.ts); an IP-literal endpoint is
 * checked by `checkEndpoint` before every copy (Node does not call `lookup` for IP literals). The SDK does not
 * retry (the outbox retries with back-off, replication/worker.ts) and computes no checksums it does not need
 * (`WHEN_REQUIRED`: a streamed PutObject carries Content-MD5 when the source's MD5 is known).
 * One client per target, rebuilt when the target's endpoint or key pair change.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { guardedLookup } from '../outbound/client.js';
import { checkAddress, normalizeHost, type OutboundPolicy } from '../outbound/guard.js';
import type { ReplicationTarget } from '../ports/replication.js';

/** Throws the guard's OutboundError when the endpoint is an IP literal the guard refuses. */
export function checkEndpoint(endpoint: string, policy: OutboundPolicy): void {
  const url = new URL(endpoint);
  const host = normalizeHost(url.hostname);
  if (isIP(host)) checkAddress(host, host, policy);
}

/** The identity of a client: what, changed, needs a new one. */
function clientKey(t: ReplicationTarget): string {
  return JSON.stringify([t.endpoint, t.region, t.accessKey, t.secretKey, t.pathStyle]);
}

/** A cache of target clients by ARN. */
export class TargetClients {
  private readonly clients = new Map<string, { key: string; client: S3Client }>();

  /** `log`: where the SDK's own warnings go (at debug: the worker logs each failure itself). */
  constructor(
    private readonly policy: OutboundPolicy,
    private readonly log: { debug: (obj: object, msg: string) => void },
  ) {}

  /** The client of `t` (made on first use or when the target changed). */
  get(t: ReplicationTarget): S3Client {
    const key = clientKey(t);
    const hit = this.clients.get(t.arn);
    if (hit && hit.key === key) return hit.client;
    hit?.client.destroy();
    const url = new URL(t.endpoint);
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const lookup = guardedLookup(normalizeHost(url.hostname), port, this.policy);
    const agent = { keepAlive: true, maxSockets: 16, lookup };
    const client = new S3Client({
      endpoint: t.endpoint,
      region: t.region,
      forcePathStyle: t.pathStyle,
      credentials: { accessKeyId: t.accessKey, secretAccessKey: t.secretKey },
      maxAttempts: 1,
      // Not the SDK's default: it prints to the console when a streamed request fails.
      logger: {
        debug: () => undefined,
        info: () => undefined,
        warn: (...args: unknown[]) => this.log.debug({ sdk: args.map(String).join(' ') }, 'replication: S3 client warning'),
        error: (...args: unknown[]) => this.log.debug({ sdk: args.map(String).join(' ') }, 'replication: S3 client error'),
      },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: new NodeHttpHandler({
        connectionTimeout: 10_000,
        socketTimeout: 120_000,
        httpAgent: new HttpAgent(agent),
        httpsAgent: new HttpsAgent(agent),
      }),
    });
    this.clients.set(t.arn, { key, client });
    return client;
  }

  /** Closes every client. */
  close(): void {
    for (const { client } of this.clients.values()) client.destroy();
    this.clients.clear();
  }
}
