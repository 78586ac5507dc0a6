/**
 * Where a remote's services are for one bucket (docs/development/kodo-protocol.md §1.1–1.3): up (uploads), io (fetch), rs (stat,
 * chgm, batch), rsf (list), api (`/sisyphus/fetch`), uc (domains). In order of precedence: the hosts given in
 * the profile; Qiniu's standard hosts of the profile's region (through the SDK's `Region.fromRegionId`) when no
 * uc host is given; else the answer of `GET /v4/query?ak=&bucket=` on the uc host (default `uc.qiniuapi.com`;
 * a Granary server answers it with its own public URL). No process-global SDK setting is touched, so two remotes
 * live side by side in one process (migrate).
 */
import qiniu from 'qiniu';
import { describeStatus, TransferError } from './errors.js';
import type { RemoteProfile } from './remotes.js';

/** One host (`host[:port]`) per service, and the scheme for all of them. */
export interface KodoHosts {
  scheme: 'http' | 'https';
  up: string;
  io: string;
  rs: string;
  rsf: string;
  api: string;
  uc: string;
}

/** Default uc host (Qiniu's cloud). */
export const DEFAULT_UC_HOST = 'uc.qiniuapi.com';

type Service = Exclude<keyof KodoHosts, 'scheme'>;
const SERVICES: Service[] = ['up', 'io', 'rs', 'rsf', 'api', 'uc'];

function given(p: RemoteProfile): Partial<Record<Service, string>> {
  const out: Partial<Record<Service, string>> = {};
  if (p.upHost) out.up = p.upHost;
  if (p.ioHost) out.io = p.ioHost;
  if (p.rsHost) out.rs = p.rsHost;
  if (p.rsfHost) out.rsf = p.rsfHost;
  if (p.apiHost) out.api = p.apiHost;
  if (p.ucHost) out.uc = p.ucHost;
  return out;
}

/** Qiniu's hosts of a region id (z0, z1, z2, na0, as0, …), first of each service. */
function regionHosts(regionId: string): Record<Service, string> {
  const region = qiniu.httpc.Region.fromRegionId(regionId) as unknown as { services: Record<string, Array<{ host: string }>> };
  const first = (name: string): string => region.services[name]?.[0]?.host ?? '';
  return { up: first('up'), io: first('io'), rs: first('rs'), rsf: first('rsf'), api: first('api'), uc: first('uc') || DEFAULT_UC_HOST };
}

/**
 * The uc host of a remote without naming a bucket (bucket listing, the key check of `remote add`): the profile's
 * uc host, else its region's, else Qiniu's default.
 */
export function ucHostOf(p: RemoteProfile): string {
  if (p.ucHost) return p.ucHost;
  if (p.region) return regionHosts(p.region).uc;
  return DEFAULT_UC_HOST;
}

/** Qiniu's default api host (the Kodo IAM API's, go-sdk iam/apis: service `api`). */
export const DEFAULT_API_HOST = 'api.qiniu.com';

/**
 * The api host of a remote without naming a bucket (the Kodo IAM API, `granary iam --remote`): the profile's api
 * host, else its region's, else its uc host when one is given (a Granary server answers every role on one port),
 * else Qiniu's default.
 */
export function apiHostOf(p: RemoteProfile): string {
  if (p.apiHost) return p.apiHost;
  if (p.region) return regionHosts(p.region).api || DEFAULT_API_HOST;
  if (p.ucHost) return p.ucHost;
  return DEFAULT_API_HOST;
}

interface V4Answer {
  hosts?: Array<Record<string, { domains?: string[] } | undefined>>;
}

/** Asks `uc` (`/v4/query`, no credentials) for a bucket's hosts. */
async function queryHosts(scheme: string, uc: string, accessKey: string, bucket: string, remote: string): Promise<Record<Service, string>> {
  const url = `${scheme}://${uc}/v4/query?ak=${encodeURIComponent(accessKey)}&bucket=${encodeURIComponent(bucket)}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new TransferError(`remote ${remote}: cannot reach ${scheme}://${uc} (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`);
  }
  const text = await res.text();
  if (res.status === 612) throw new TransferError(`remote ${remote}: the AccessKey ${accessKey} is not known there (612 ${text.trim()})`, 612);
  // 631: the bucket does not exist there (or the key may not use it), as Kodo answers the region query.
  if (res.status === 631) throw new TransferError(describeStatus(631, text, `remote ${remote}: bucket ${bucket}`), 631);
  if (res.status !== 200) throw new TransferError(describeStatus(res.status, text, `remote ${remote}: region query`), res.status);
  const answer = JSON.parse(text) as V4Answer;
  const h = answer.hosts?.[0];
  const pick = (name: string): string => h?.[name]?.domains?.[0] ?? '';
  return { up: pick('up'), io: pick('io'), rs: pick('rs'), rsf: pick('rsf'), api: pick('api'), uc: pick('uc') || uc };
}

/** The hosts of `bucket` on the remote `p` (see the module comment). Throws a TransferError when unreachable. */
export async function resolveHosts(p: RemoteProfile, bucket: string): Promise<KodoHosts> {
  const scheme = p.https ? 'https' : 'http';
  const fixed = given(p);
  if (SERVICES.every((s) => fixed[s] !== undefined || s === 'uc')) {
    return { scheme, uc: fixed.uc ?? fixed.rs!, ...(fixed as Record<Exclude<Service, 'uc'>, string>) } as KodoHosts;
  }
  const base = p.region && !p.ucHost ? regionHosts(p.region) : await queryHosts(scheme, p.ucHost ?? DEFAULT_UC_HOST, p.accessKey, bucket, p.name);
  const hosts = { scheme, ...base, ...fixed } as KodoHosts;
  for (const s of SERVICES) if (!hosts[s]) throw new TransferError(`remote ${p.name}: no ${s} host known for bucket ${bucket} (give --${s}-host)`);
  return hosts;
}
