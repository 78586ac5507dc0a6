/**
 * The `role` and `operation` labels of a request (docs/development/kodo-protocol.md §1: one port serves every role). The operation is
 * the matched route's pattern (`POST /mkblk/:blockSize`, `GET /*` for downloads): a fixed set, never a key or a
 * bucket name. The role follows from the pattern's first segment; bucket-management routes (uc) are the default,
 * as new bucket settings keep arriving there. A request no route matched is role and operation `unmatched`.
 */
import { OP_NAMES } from '../roles/rs/ops.js';

/** The Kodo roles, plus `health` (health checks) and `console` (the console listener). */
export type Role = 'up' | 'io' | 'rs' | 'rsf' | 'api' | 'uc' | 'health' | 'console' | 'unmatched';

const BY_SEGMENT: Record<string, Role> = {
  '': 'up', // form upload: POST /
  mkblk: 'up',
  bput: 'up',
  mkfile: 'up',
  list: 'rsf',
  batch: 'rs',
  pfop: 'api',
  status: 'api',
  pipelines: 'api',
  sisyphus: 'api',
  workflowTemplates: 'api',
  fetch: 'io',
  prefetch: 'io',
  '*': 'io', // downloads, path style and bound domains
  health: 'health',
};
for (const op of OP_NAMES) BY_SEGMENT[op] ??= 'rs';

/** The role of a route pattern (fastify `routeOptions.url`); undefined (no route) → `unmatched`. */
export function roleOf(routeUrl: string | undefined): Role {
  if (routeUrl === undefined) return 'unmatched';
  if (routeUrl.startsWith('/buckets/:bucket/objects/')) return 'up'; // v2 multipart upload
  if (routeUrl === '/v2/list') return 'rsf';
  const segment = routeUrl.split('/')[1] ?? '';
  return Object.hasOwn(BY_SEGMENT, segment) ? (BY_SEGMENT[segment] as Role) : 'uc';
}

/** The operation label: `<METHOD> <route pattern>` (HEAD reported as GET), or `unmatched`. */
export function operationOf(method: string, routeUrl: string | undefined): string {
  if (routeUrl === undefined) return 'unmatched';
  return `${method === 'HEAD' ? 'GET' : method} ${routeUrl}`;
}
