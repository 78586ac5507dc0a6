/**
 * The `role` and `operation` labels of a request (docs/development/kodo-protocol.md §1: one port serves every
 * role), taken from the matched route's entry in the route table (src/routes/table.ts), which register.ts copies
 * into the route's `config`: `up.mkblk`, `rs.stat`, `io.download`, `console.metrics`… — a fixed set, never a key or
 * a bucket name. A request no route matched is role and operation `unmatched`.
 */
import type { RouteLabels } from '../routes/register.js';
import type { Role as RouteRole } from '../routes/types.js';

/** The roles of the route table, the S3 listener's `s3`, and `unmatched` (no route). */
export type Role = RouteRole | 's3' | 'unmatched';

/** The labels of an answered request: its route's (`config` of the matched route), or `unmatched`. */
export function labelsOf(config: Partial<RouteLabels> | undefined): { role: Role; operation: string } {
  if (config?.role === undefined || config.operation === undefined) return { role: 'unmatched', operation: 'unmatched' };
  return { role: config.role, operation: config.operation };
}
