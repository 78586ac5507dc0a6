/**
 * The shape of the route table (src/routes/table.ts): every route the main listener and the console listener
 * serve is one `RouteEntry` — its method(s), path (fastify syntax), role and operation (the metrics labels), the
 * kind of authentication the auth step runs before the handler (auth-step.ts), how the bucket it acts on is found
 * and authorised, and the handler. Routes added by plugins (the CORS preflight, the console's static files) are
 * `PluginRoute`s: declared here too, registered by their plugin. register.ts registers the table and refuses, at
 * build time, any route that is in neither.
 */
import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import type { RouteCall } from '../http/route-call.js';

/** The Kodo roles, plus `health` (health checks) and `console` (the console listener). */
export type Role = 'up' | 'io' | 'rs' | 'rsf' | 'api' | 'uc' | 'health' | 'console';

/** The HTTP methods of the table; `ALL` = every method fastify knows (the console API's unknown-route answer). */
export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'ALL';

/**
 * Who may call a route, checked by the auth step (auth-step.ts) once, before the handler:
 * - `management`: a `QBox`/`Qiniu` signature by a known key (401/403, docs/development/kodo-protocol.md §2.2–2.3);
 *   the handler gets the caller.
 * - `uploadToken`: an upload token (docs/development/kodo-protocol.md §2.1); verified by the handler's upload path,
 *   as the form upload's token arrives inside the streamed body (the `token` field).
 * - `download`: public bucket, or a private download URL (`e`/`token`, §2.4); checked by the download path, which
 *   knows the bucket only after reading it.
 * - `none`: no credential (health, region query, prefop status).
 * - `console-session`: a console session cookie, the Origin check and, for non-GET calls, the CSRF token
 *   (console/guard.ts `callerOf`); the handler gets the session.
 * - `console-session-optional`: the session if there is one (`call.callerIfAny`), none otherwise — the page's
 *   "am I signed in?" call, answered 200 either way.
 * - `console-signin`: the sign-in call (Origin check and throttle, in the handler).
 * - `metrics-token`: `Authorization: Bearer <GRANARY_METRICS_TOKEN>` when one is set (metrics/route.ts).
 */
export type AuthKind =
  | 'management'
  | 'uploadToken'
  | 'download'
  | 'none'
  | 'console-session'
  | 'console-session-optional'
  | 'console-signin'
  | 'metrics-token';

/**
 * How the bucket a route acts on is found and who authorises it (631 missing, 403 another account's):
 * - `none`: no bucket (or only the caller's own, filtered: bucket lists);
 * - `param`: the path parameter `name`, authorised by the auth step before the handler (the handler gets it);
 * - `query`: the required query/form parameter `name` (400 when absent), authorised by the auth step likewise;
 * - `in-handler`: found where `where` says (EncodedEntryURI in the path, the body, batch ops, two buckets…) and
 *   authorised by the handler through the helper the auth step gives it (`call.authorize`), after the route's own
 *   argument checks — once for every bucket it touches;
 * - `domain`: authorised by the domain function `by` from `where` (upload token scope, listing, pfop…).
 */
export type BucketRule =
  | { from: 'none' }
  | { from: 'param'; name: string }
  | { from: 'query'; name: string }
  | { from: 'in-handler'; where: string }
  | { from: 'domain'; where: string; by: string };

/**
 * The IAM action a route needs (docs/reference/iam.md, "Actions of each door"), evaluated for the credential's
 * principal (root, account owner, or sub-user with its policies: auth/authorize.ts) by the auth step:
 * - `none`: no action — no credential at all (health, region query, the console app), or one acting only on what
 *   is its own (sign-out, its own task status; bucket lists filtered to what the key may see);
 * - `owner-only`: the account's own keys and the root key; a sub-user is refused (403) — IAM administration, key
 *   pairs, bucket creation, pipelines and templates;
 * - `{ action, resource }`: a Kodo action (`kodo/Get`, iam/actions.ts), or a function of the request where the
 *   action depends on it, on the `resource` the bucket rule finds: `bucket`, or `object` (a key of it; a listing
 *   is `bucket` with its prefix). The auth step evaluates it for `param`/`query` buckets; `call.authorize` with it for
 *   `in-handler` buckets; the domain function named by a `domain` rule with the same action (upload token scope at
 *   commit, listing, pfop, fetch; the download path for private URLs);
 * - `{ each, resource }`: every item of the request is checked with its own action (`each` says how: the ops of a
 *   batch, rs op name → action in iam/operation-actions.ts) through `call.authorize`.
 */
export type RouteIam =
  | 'none'
  | 'owner-only'
  | { action: string | ((request: FastifyRequest) => string); resource: 'bucket' | 'object' }
  | { each: string; resource: 'object' };

/** A route's handler: the auth step's result (`call`: caller, authorised bucket, helpers), the request, the reply. */
export type RouteHandler<Ctx, Who> = (call: RouteCall<Ctx, Who>, request: FastifyRequest, reply: FastifyReply) => unknown;

/** What every entry and plugin route declares. */
export interface RouteFacts {
  method: Method | Method[];
  /** fastify path syntax (`/mkblk/:blockSize`, `/fetch/*`). */
  url: string;
  role: Role;
  /** The metrics `operation` label: `<role>.<name>` (e.g. `rs.stat`, `up.mkblk`); a fixed set, never a key. */
  operation: string;
  auth: AuthKind;
  bucket: BucketRule;
  /** The IAM action the route needs (RouteIam). */
  iam: RouteIam;
}

/** One route of the table. */
export interface RouteEntry<Ctx, Who> extends RouteFacts {
  handler: RouteHandler<Ctx, Who>;
  /**
   * Where it is registered: `main` (buffered small bodies), `stream` (main listener, bodies always streamed:
   * chunks, parts, putb64), `console-api`, `console-app`, `console-listener`.
   */
  group: 'main' | 'stream' | 'console-api' | 'console-app' | 'console-listener';
  /** Checks of the path answered before the auth step (400), where a route always answered them first. */
  precheck?: (request: FastifyRequest) => void;
  /** fastify route options the route needs (downloads: its own HEAD, the security headers). */
  exposeHeadRoute?: boolean;
  onSend?: onSendHookHandler;
}

/** A route a plugin registers (declared for the labels, the 405 table and the coverage test). */
export interface PluginRoute extends RouteFacts {
  plugin: string;
  /** Whether a route the plugin registers (its method and url) is this one. */
  owns(method: string, url: string): boolean;
}
