/**
 * The handler contract: what every route handler of the route tables receives (`RouteCall`), left on the request
 * by the route table's auth step (src/routes/auth-step.ts), which builds it. Roles, the console API and the
 * listeners import it from here, below the route tables, so no handler imports the table that lists it.
 */
import { authorizeBucket, type Ask } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord } from '../ports/meta.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The auth step's result for this request (src/routes/auth-step.ts); null until it ran. */
    routeCall: RouteCall<unknown, unknown> | null;
  }
}

/** The IAM facts of a request the auth step found: the route's action for it, the door, the request id. */
export interface CallIam {
  action: string | undefined;
  door: 'kodo' | 'console';
  requestId: string;
}

/** What `authorize` is asked about a bucket besides the route's action: a key, a listing's prefix, another action. */
export interface AuthorizeItem {
  key?: string;
  prefix?: string;
  /** An action of its own (a batch's op, a copy's source read) instead of the route's. */
  action?: string;
}

/**
 * What a handler gets from the auth step: the listener's context (`ctx`: the Granary, or the console's API
 * context), the authenticated caller (`caller`: a management `Caller`, or a console session), the bucket the table
 * said to authorise (`bucket`), and `authorize` for the buckets a route finds only in its arguments — evaluated
 * with the route's IAM action (the table's `iam` column) for a sub-user's key.
 */
export class RouteCall<Ctx, Who> {
  constructor(
    readonly ctx: Ctx,
    readonly g: Granary,
    private readonly who: Who | undefined,
    private readonly authorised: BucketRecord | undefined,
    private readonly iam: CallIam | undefined,
  ) {}

  /** The route's IAM action for this request (undefined: `none`, `owner-only` or `each`). */
  get action(): string | undefined {
    return this.iam?.action;
  }

  private ask(item: AuthorizeItem | undefined): Ask | undefined {
    const action = item?.action ?? this.iam?.action;
    if (action === undefined) return undefined;
    return {
      action,
      ...(item?.key !== undefined ? { key: item.key } : {}),
      ...(item?.prefix !== undefined ? { prefix: item.prefix } : {}),
      door: this.iam?.door ?? 'kodo',
      requestId: this.iam?.requestId ?? '',
    };
  }

  /** The authenticated caller; a route whose auth kind has none asking for it is a table error (599). */
  get caller(): Who {
    if (this.who === undefined) throw Errors.internal('the route table gives this route no caller');
    return this.who;
  }

  /** The caller when the auth kind found one (`console-session-optional`), else undefined. */
  get callerIfAny(): Who | undefined {
    return this.who;
  }

  /** The bucket the table's `param`/`query` rule authorised; 599 for a route without that rule. */
  get bucket(): BucketRecord {
    if (this.authorised === undefined) throw Errors.internal('the route table authorises no bucket for this route');
    return this.authorised;
  }

  /**
   * Authorises `bucket` for the caller (the `in-handler` rule) with the route's action, on `item.key` when given:
   * the bucket, 631 missing, 403 another account's or not allowed by a sub-user's policies.
   */
  authorize(bucket: string, item?: AuthorizeItem): Promise<BucketRecord> {
    return authorizeBucket(this.g, (this.caller as { accessKey: string }).accessKey, bucket, this.ask(item));
  }

  /** Authorises `bucket` for a key the route verified itself (a saveas signature) with `item`'s action: 631, 403. */
  authorizeAs(accessKey: string, bucket: string, item: AuthorizeItem & { action: string }): Promise<BucketRecord> {
    return authorizeBucket(this.g, accessKey, bucket, this.ask(item));
  }
}
