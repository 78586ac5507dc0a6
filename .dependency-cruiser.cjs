/**
 * The layers of src/ and the rules that keep imports flowing one way — the source of truth for
 * docs/development/architecture.md ("Layers"). Checked by `npm run lint` (`depcruise src`) and by
 * test/unit/layers.test.ts (`npm run test:unit`); both must report zero violations.
 *
 * A module may import its own layer and the layers below it, never one above. Top to bottom:
 *   entry     the composition roots and listeners: main.ts, the CLI, the worker processes, the data-dir migration,
 *             the three listeners (server.ts, s3api/server.ts, console/listener.ts + console/app.ts), their one
 *             start-up (start-listener.ts) and connection plumbing, store/open.ts (the one place that picks the
 *             concrete stores)
 *   routes    the route tables (src/routes/, s3api/routes.ts) and what reads them (metrics/http.ts, operations.ts)
 *   handlers  the role handlers: src/roles/, the S3 door (src/s3api/), the console API (src/console/),
 *             metrics/route.ts (GET /metrics)
 *   http      the handler contract: src/http/ (RouteCall, the fastify glue of Kodo answers, Range and conditions)
 *   domain    objects, buckets, policy, iam, fops, jobs, events, replication, auth, metrics, outbound, the transfer client, and
 *             context.ts (the Granary: the domain's handle on the ports and services)
 *   stores    src/store/: the implementations of the ports. Only the entry layer names a store (rule
 *             `stores-only-from-entry`); the layers between reach them through the ports.
 *   ports     src/ports/: the interfaces the domain uses and the stores implement
 *   base      configuration, the settings and error tables, the log format, back-off, JSON text, random ids
 *
 * Type-only imports (`import type`) count: a type-only cycle or upward import is still a layer the code names, and
 * the checker sees `import type` (tsPreCompilationDeps).
 */

/** Layers, top first: [name, path patterns]. A file matching no layer is an error (`in-a-layer`). */
const LAYERS = [
  [
    'entry',
    [
      '^src/(main|cli|server|start-listener|start-banner|stop-bound|listen-error|listen-quietly|connections|handlers-in-flight|idle-gc)[.]ts$',
      '^src/(cli|workers|migrate|listener)/',
      '^src/s3api/server[.]ts$',
      '^src/console/(listener|app)[.]ts$',
      '^src/store/open[.]ts$',
    ],
  ],
  ['routes', ['^src/routes/', '^src/s3api/routes[.]ts$', '^src/metrics/(http|operations)[.]ts$']],
  ['handlers', ['^src/roles/', '^src/s3api/', '^src/console/', '^src/metrics/route[.]ts$']],
  ['http', ['^src/http/']],
  ['domain', ['^src/(objects|buckets|policy|iam|fops|jobs|events|replication|auth|metrics|outbound|transfer)/', '^src/context[.]ts$']],
  ['stores', ['^src/store/']],
  ['ports', ['^src/ports/']],
  ['base', ['^src/(config|config-types|config-hosts|trust-proxy|settings-table|errors|errors-when|log|backoff|bigint-json|random-id)[.]ts$']],
];

/**
 * The one allowance across layers: a store evaluates the pure meaning of a lifecycle rule (functions of port types,
 * no I/O, no context) inside its listings, so a rule is decided in one place for the domain and every store.
 */
const ALLOWED_UP = { stores: '^src/(buckets/lifecycle-rules|policy/expiry)[.]ts$' };

/** The paths of layer `i` and of every layer above it, as one pattern each. */
const own = (i) => `(${LAYERS[i][1].join('|')})`;
const above = (i) => `(${LAYERS.slice(0, i).flatMap(([, p]) => p).join('|')})`;
/** A file is in the first layer whose pattern it matches (s3api/server.ts is entry, not handlers). */
const inLayer = (i) => ({ path: own(i), ...(i > 0 ? { pathNot: above(i) } : {}) });

const upward = LAYERS.slice(1).map(([name], k) => {
  const i = k + 1;
  return /** @type {import('dependency-cruiser').IForbiddenRuleType} */ ({
    name: `no-upward-from-${name}`,
    comment: `${name} imports a layer above it (${LAYERS.slice(0, i).map(([n]) => n).join(', ')}): move the shared part down.`,
    severity: 'error',
    from: inLayer(i),
    // Entry-layer files that live in lower folders (s3api/server.ts, console/listener.ts, store/open.ts) count as
    // entry; the `to` side uses the same first-match order.
    to: { path: above(i), ...(ALLOWED_UP[name] ? { pathNot: ALLOWED_UP[name] } : {}) },
  });
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle (type-only imports count): split the shared part out into a module both import.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'in-a-layer',
      comment: 'Every module of src/ belongs to a layer of .dependency-cruiser.cjs: add its path to one.',
      severity: 'error',
      from: { path: '^src/', pathNot: `(${LAYERS.flatMap(([, p]) => p).join('|')})` },
      to: {},
    },
    ...upward,
    {
      name: 'stores-only-from-entry',
      comment: 'Only the entry layer names a concrete store (store/open.ts picks them); others use src/ports/.',
      severity: 'error',
      from: { path: '^src/', pathNot: `(${LAYERS[0][1].join('|')}|^src/store/)` },
      to: { path: '^src/store/' },
    },
    {
      name: 'no-fastify-below-http',
      comment: 'fastify is the listeners\', route tables\' and handlers\' business; the domain and below are framework-free.',
      severity: 'error',
      from: { path: `(${LAYERS.slice(4).flatMap(([, p]) => p).join('|')})`, pathNot: above(4) },
      to: { path: '(^|/)node_modules/(fastify|@fastify/)' },
    },
    {
      name: 'client-apart-from-server',
      comment:
        'The transfer client (src/transfer/) is a client of the HTTP API: it names no listener, route, handler or store.',
      severity: 'error',
      from: { path: '^src/transfer/' },
      to: { path: '^src/(main|server|routes|roles|http|s3api|console|workers|store|cli)[./]' },
    },
    {
      name: 'cli-reaches-server-through-serve',
      comment:
        'The CLI starts the server only in cli/serve.ts (loaded on use); other commands use the domain, the stores ' +
        'and the transfer client, never a listener.',
      severity: 'error',
      from: { path: '^src/cli/', pathNot: '^src/cli/serve[.]ts$' },
      to: { path: '^src/(main|server|workers/|s3api/server|console/(listener|app))' },
    },
    {
      name: 'server-apart-from-cli',
      comment: 'The server and the domain never load the CLI or the transfer client (the data-dir migration may use it).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli[./]|transfer/|migrate/)' },
      to: { path: '^src/(cli[./]|transfer/)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|console|test|bench|scripts)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js'],
    },
    moduleSystems: ['es6', 'cjs'],
    reporterOptions: { text: { highlightFocused: true } },
  },
};
