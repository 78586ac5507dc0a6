/**
 * Refused requests of IAM sub-users (docs/reference/iam.md, "Audits"): each refusal is one audit record of the
 * sub-user's account — `actor` the sub-user's AccessKey, `service` the door (`kodo`, `s3`, `console`), `action` the
 * Kodo action asked (`kodo/Delete`), `resource` `qrn:kodo:::<bucket>[/<key>]`, `iuid`, the request id, error code 403
 * and the reason — bounded per account by GRANARY_IAM_AUDIT_MAX like IAM changes and read through the audits API
 * (`GET /iam/v1/audits`); and one count of `granary_iam_refused_total{door, action}` on `/metrics`.
 *
 * Recording never delays or changes the refusal: the record is written in the background, at most `MAX_IN_FLIGHT`
 * at once per process (beyond that, under a flood of refusals, records are dropped and counted in the log line of
 * the next one written); a failed write is logged.
 */
import type { Granary } from '../context.js';

/** Most audit writes of refusals in flight per process. */
const MAX_IN_FLIGHT = 64;
let inFlight = 0;
let dropped = 0;

export interface Refusal {
  accessKey: string;
  action: string;
  /** `<bucket>` or `<bucket>/<key>`, or `*` for an account-only operation. */
  resource: string;
  reason: string;
  door: 'kodo' | 's3' | 'console';
  requestId: string;
}

/** Records a sub-user's refusal (see the module comment); does nothing for a key that is not a sub-user's. */
export function recordRefusal(g: Granary, r: Refusal): void {
  const account = g.keyIndex.isSubUser(r.accessKey) ? g.keyIndex.accountOf(r.accessKey) : undefined;
  if (account === undefined) return;
  g.metrics?.iamRefused.inc({ door: r.door, action: r.action });
  if (inFlight >= MAX_IN_FLIGHT) {
    dropped++;
    return;
  }
  inFlight++;
  const lost = dropped;
  dropped = 0;
  g.meta.iam
    .appendAudit(
      {
        owner: account,
        actor: r.accessKey,
        service: r.door,
        action: r.action,
        resource: r.resource === '*' ? '*' : `qrn:kodo:::${r.resource}`,
        iuid: g.keyIndex.iuidOf(r.accessKey) ?? 0,
        requestId: r.requestId,
        sourceIp: '',
        errorCode: 403,
        errorMessage: r.reason,
        detail: JSON.stringify(lost > 0 ? { refused: true, droppedBefore: lost } : { refused: true }),
        atMs: g.clock.nowMs(),
      },
      g.config.iamAuditMax,
    )
    .catch((err: unknown) => g.log.warn({ err }, 'iam: recording a refusal failed'))
    .finally(() => inFlight--);
}
