/**
 * A Kodo client for one remote (a Granary server or Qiniu's cloud): management calls signed with the `Qiniu`
 * token of the official SDK (`qiniu.util.generateAccessTokenV2`, docs/development/kodo-protocol.md §2.3), upload tokens from
 * `qiniu.rs.PutPolicy` (§2.4), private download URLs (§2.5). Hosts per bucket come from hosts.ts.
 *
 * Calls: stat (§8.1/8.2, 612 → undefined), list with markers (§8.3), chgm / chtype (§8.1), async fetch
 * `/sisyphus/fetch` (§8.5), domains `/v3/domains` (§8.6). Non-200 answers become a TransferError with a one-line
 * message (401 wrong keys, 631 no such bucket, …); network failures name the host.
 */
import { createHmac } from 'node:crypto';
import qiniu from 'qiniu';
import { urlsafeB64Encode } from '../auth/base64.js';
import { describeStatus, TransferError } from './errors.js';
import { resolveHosts, type KodoHosts } from './hosts.js';
import type { RemoteProfile } from './remotes.js';

/** An entry as stat and list answer it (§8.2). `putTime` in 100-ns units (rounded by JSON.parse), `type` 0..4. */
export interface KodoEntry {
  key: string;
  fsize: number;
  hash: string;
  mimeType: string;
  putTime: number;
  type: number;
  md5?: string;
  /** Metadata without the `x-qn-meta-` prefix. */
  'x-qn-meta'?: Record<string, string>;
}

/** A raw answer: status and body text. */
export interface KodoAnswer {
  status: number;
  text: string;
}

type Service = Exclude<keyof KodoHosts, 'scheme'>;

/** How a request is authorised: a `Qiniu` management token, an upload token, or nothing. */
export type KodoAuth = { kind: 'qiniu' } | { kind: 'uptoken'; token: string } | { kind: 'none' };

/** Request timeout, ms (one request; large bodies are sent in 4 MiB parts). */
const TIMEOUT_MS = 120_000;

/** The EncodedEntryURI of `bucket:key` (§8.1). */
export function encodedEntry(bucket: string, key: string): string {
  return urlsafeB64Encode(`${bucket}:${key}`);
}

/** A key as a URL path (each byte percent-encoded except unreserved characters and `/`). */
export function keyPath(key: string): string {
  return encodeURIComponent(key).replace(/%2F/g, '/');
}

export class KodoClient {
  readonly mac: qiniu.auth.digest.Mac;
  private readonly hostCache = new Map<string, Promise<KodoHosts>>();
  private readonly baseCache = new Map<string, Promise<string>>();

  constructor(readonly profile: RemoteProfile) {
    this.mac = new qiniu.auth.digest.Mac(profile.accessKey, profile.secretKey);
  }

  get name(): string {
    return this.profile.name;
  }

  /** The hosts of `bucket` (resolved once per bucket). */
  hosts(bucket: string): Promise<KodoHosts> {
    let p = this.hostCache.get(bucket);
    if (!p) {
      p = resolveHosts(this.profile, bucket);
      this.hostCache.set(bucket, p);
      p.catch(() => this.hostCache.delete(bucket));
    }
    return p;
  }

  /** `<scheme>://<host of service>` for `bucket`. */
  async origin(bucket: string, service: Service): Promise<string> {
    const h = await this.hosts(bucket);
    return `${h.scheme}://${h[service]}`;
  }

  /** One request to `service` of `bucket`'s region; the answer whatever its status (network errors throw). */
  async request(
    bucket: string,
    service: Service,
    method: string,
    path: string,
    opts: { body?: string | Buffer; contentType?: string; auth?: KodoAuth; headers?: Record<string, string> } = {},
  ): Promise<KodoAnswer> {
    const url = `${await this.origin(bucket, service)}${path}`;
    const contentType = opts.contentType ?? 'application/x-www-form-urlencoded';
    const headers: Record<string, string> = { 'content-type': contentType, ...opts.headers };
    const auth = opts.auth ?? { kind: 'qiniu' };
    if (auth.kind === 'qiniu') {
      const signedBody = typeof opts.body === 'string' ? opts.body : undefined;
      headers.authorization = qiniu.util.generateAccessTokenV2(this.mac, url, method, contentType, signedBody ?? '');
    } else if (auth.kind === 'uptoken') headers.authorization = `UpToken ${auth.token}`;
    let res: Response;
    try {
      res = await fetch(url, { method, headers, ...(opts.body !== undefined ? { body: opts.body } : {}), signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err) {
      const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
      throw new TransferError(`remote ${this.name}: ${method} ${new URL(url).origin} failed (${cause})`);
    }
    return { status: res.status, text: await res.text() };
  }

  /** Like `request`, but a non-200 answer throws a TransferError; answers the parsed JSON body (null when empty). */
  async call<T>(bucket: string, service: Service, method: string, path: string, opts: Parameters<KodoClient['request']>[4] = {}): Promise<T> {
    const r = await this.request(bucket, service, method, path, opts);
    if (r.status !== 200) throw new TransferError(describeStatus(r.status, r.text, `remote ${this.name}, bucket ${bucket}`), r.status);
    return (r.text.trim() === '' ? null : JSON.parse(r.text)) as T;
  }

  /** Stat of `bucket:key`, undefined when there is no such entry (612). */
  async stat(bucket: string, key: string): Promise<KodoEntry | undefined> {
    const r = await this.request(bucket, 'rs', 'GET', `/stat/${encodedEntry(bucket, key)}`);
    if (r.status === 612) return undefined;
    if (r.status !== 200) throw new TransferError(describeStatus(r.status, r.text, `remote ${this.name}, ${bucket}:${key}`), r.status);
    return { key, ...(JSON.parse(r.text) as Omit<KodoEntry, 'key'>) };
  }

  /** One page of the listing of `bucket` under `prefix` from `marker` (§8.3); `marker` '' when done. */
  async listPage(bucket: string, prefix: string, marker: string, limit = 1000): Promise<{ items: KodoEntry[]; marker: string }> {
    const q = new URLSearchParams({ bucket, prefix, marker, limit: String(limit), delimiter: '' });
    const page = await this.call<{ items?: KodoEntry[]; marker?: string }>(bucket, 'rsf', 'POST', `/list?${q.toString()}`);
    return { items: page?.items ?? [], marker: page?.marker ?? '' };
  }

  /** The pages of the listing of `bucket` under `prefix` (markers followed to the end). */
  async *pages(bucket: string, prefix: string): AsyncGenerator<KodoEntry[]> {
    let next = '';
    do {
      const page = await this.listPage(bucket, prefix, next);
      yield page.items;
      next = page.marker;
    } while (next !== '');
  }

  /** Every entry of `bucket` under `prefix`, in key order. */
  async *list(bucket: string, prefix: string): AsyncGenerator<KodoEntry> {
    for await (const page of this.pages(bucket, prefix)) yield* page;
  }

  /** Stats of up to 1000 keys in one `/batch` (§8.4); a key without an entry maps to undefined. */
  async statMany(bucket: string, keys: string[]): Promise<Map<string, KodoEntry | undefined>> {
    const out = new Map<string, KodoEntry | undefined>();
    if (keys.length === 0) return out;
    const body = keys.map((k) => `op=${encodeURIComponent(`/stat/${encodedEntry(bucket, k)}`)}`).join('&');
    const r = await this.request(bucket, 'rs', 'POST', '/batch', { body });
    if (r.status !== 200 && r.status !== 298) throw new TransferError(describeStatus(r.status, r.text, `remote ${this.name}, bucket ${bucket}`), r.status);
    const answers = JSON.parse(r.text) as Array<{ code: number; data?: Omit<KodoEntry, 'key'> }>;
    keys.forEach((k, i) => {
      const a = answers[i];
      out.set(k, a && a.code === 200 && a.data ? { key: k, ...a.data } : undefined);
    });
    return out;
  }

  /** Checks that the keys are accepted and the bucket exists (one listing of one key). */
  async checkBucket(bucket: string): Promise<void> {
    await this.listPage(bucket, '', '', 1);
  }

  /** Sets MIME type and metadata of an entry (chgm, §8.1); `meta` names without `x-qn-meta-`. */
  async chgm(bucket: string, key: string, mimeType: string | undefined, meta: Record<string, string>): Promise<void> {
    let path = `/chgm/${encodedEntry(bucket, key)}`;
    if (mimeType) path += `/mime/${urlsafeB64Encode(mimeType)}`;
    for (const [name, value] of Object.entries(meta)) path += `/x-qn-meta-${name}/${urlsafeB64Encode(value)}`;
    await this.call(bucket, 'rs', 'POST', path);
  }

  /** Sets the storage class (chtype, §8.1; 0 standard, 1 IA, 2 archive, 3 deep archive, 4 archive IR). */
  async chtype(bucket: string, key: string, type: number): Promise<void> {
    await this.call(bucket, 'rs', 'POST', `/chtype/${encodedEntry(bucket, key)}/type/${type}`);
  }

  /** An upload token for `bucket:key` (may overwrite), valid one day (§3.1); `fileType` the storage class 0..4. */
  uploadToken(bucket: string, key: string, fileType = 0): string {
    const policy: Record<string, unknown> = { scope: `${bucket}:${key}`, expires: 86_400 };
    if (fileType) policy.fileType = fileType;
    return new qiniu.rs.PutPolicy(policy as unknown as qiniu.rs.PutPolicyOptions).uploadToken(this.mac);
  }

  /**
   * Base URL of downloads from `bucket`: its first bound domain (`/v3/domains`, §8.6), else path style on the io
   * host (`<io>/<bucket>`, how Granary serves buckets without a domain). `domain` (a `--domain` flag) wins.
   */
  downloadBase(bucket: string, domain?: string): Promise<string> {
    const cacheKey = `${bucket}\n${domain ?? ''}`;
    let p = this.baseCache.get(cacheKey);
    if (!p) {
      p = (async () => {
        const h = await this.hosts(bucket);
        if (domain) return /^https?:\/\//.test(domain) ? domain.replace(/\/+$/, '') : `${h.scheme}://${domain}`;
        // An endpoint without the domains API (404/405/400) serves path style.
        const list = await this.call<Array<{ domain?: string }> | null>(bucket, 'uc', 'GET', `/v3/domains?tbl=${encodeURIComponent(bucket)}`).catch((err: unknown) => {
          if (err instanceof TransferError && (err.status === 400 || err.status === 404 || err.status === 405)) return null;
          throw err;
        });
        const first = list?.find((d) => typeof d.domain === 'string' && d.domain !== '' && !d.domain.startsWith('.'))?.domain;
        return first ? `${h.scheme}://${first}` : `${h.scheme}://${h.io}/${encodeURIComponent(bucket)}`;
      })();
      this.baseCache.set(cacheKey, p);
      p.catch(() => this.baseCache.delete(cacheKey));
    }
    return p;
  }

  /** A signed (private) download URL of `bucket:key` valid for `expiresSeconds` (§2.5; public buckets ignore the token). */
  async downloadUrl(bucket: string, key: string, expiresSeconds = 3600, domain?: string): Promise<string> {
    const base = `${await this.downloadBase(bucket, domain)}/${keyPath(key)}`;
    const deadline = Math.floor(Date.now() / 1000) + expiresSeconds;
    const unsigned = `${base}?e=${deadline}`;
    const sign = createHmac('sha1', this.profile.secretKey).update(unsigned).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
    return `${unsigned}&token=${this.profile.accessKey}:${sign}`;
  }
}
