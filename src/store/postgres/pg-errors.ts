/**
 * PostgreSQL failures → the errors the MetaStore port promises (the way store/s3/s3-errors.ts maps S3's): an error
 * that means the metadata database failed or cannot be reached becomes `code: 'PG_<REASON>'`, which `storageError`
 * (src/errors.ts) maps to 599 `metadataRemote` ("the metadata database (PostgreSQL) failed or did not answer:
 * … (PG_DOWN)"); the client sees that JSON answer, the log the original error (its `cause`). Errors of a statement
 * itself (a constraint, a bug) are left as they are: 599 `internal` like any unexpected failure.
 *
 * Reasons: PG_UNREACHABLE (connection refused, host unknown or unreachable), PG_CONNECTION_LOST (reset, ended, the
 * server terminated the session), PG_TIMEOUT (no connection or answer within GRANARY_PG_TIMEOUT: a statement
 * cancelled by statement_timeout, SQLSTATE 57014, or no answer at all), PG_SHUTDOWN (57P01–57P03: the server is
 * shutting down or starting), PG_TOO_MANY_CONNECTIONS (53300), PG_DISK_FULL (53100), PG_OUT_OF_MEMORY (53200),
 * PG_READ_ONLY (25006: a read-only server, e.g. a standby), PG_AUTH (28xxx), PG_IO (58xxx, XX001/XX002), and
 * PG_<SQLSTATE> for the rest of the classes 08 (connection), 53 (resources), 57 (operator intervention).
 */

/** A PostgreSQL failure of the database itself, with a `code` the rest of Granary understands. */
export class PgUnavailable extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PgUnavailable';
  }
}

/** SQLSTATEs with a reason of their own. */
const SQLSTATE_REASONS: Record<string, string> = {
  '57014': 'TIMEOUT',
  '25P03': 'TIMEOUT',
  '57P01': 'SHUTDOWN',
  '57P02': 'SHUTDOWN',
  '57P03': 'SHUTDOWN',
  '53300': 'TOO_MANY_CONNECTIONS',
  '53100': 'DISK_FULL',
  '53200': 'OUT_OF_MEMORY',
  '25006': 'READ_ONLY',
  XX001: 'IO',
  XX002: 'IO',
};

/** SQLSTATE classes of a failing database (the reason is then the SQLSTATE itself, or the class's name). */
const SQLSTATE_CLASSES: Record<string, string | undefined> = { '08': undefined, '53': undefined, '57': undefined, '28': 'AUTH', '58': 'IO' };

/** Network errnos of the connection. */
const ERRNO_REASONS: Record<string, string> = {
  ECONNREFUSED: 'UNREACHABLE',
  EHOSTUNREACH: 'UNREACHABLE',
  ENETUNREACH: 'UNREACHABLE',
  ENOTFOUND: 'UNREACHABLE',
  EAI_AGAIN: 'UNREACHABLE',
  ECONNRESET: 'CONNECTION_LOST',
  ECONNABORTED: 'CONNECTION_LOST',
  EPIPE: 'CONNECTION_LOST',
  ETIMEDOUT: 'TIMEOUT',
};

/** Messages of the `pg` driver's own connection failures (they carry no code). */
const MESSAGE_REASONS: Array<[RegExp, string]> = [
  [/timeout exceeded when trying to connect|connection timeout|Query read timeout/i, 'TIMEOUT'],
  [/Connection terminated|Connection ended|not queryable|Client was closed|closed the connection/i, 'CONNECTION_LOST'],
];

/** The PG_ reason of `err` when it means the database failed or cannot be reached; undefined otherwise. */
export function unavailableReason(err: unknown): string | undefined {
  if (err instanceof PgUnavailable) return err.code.slice(3);
  const e = (err ?? {}) as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code !== undefined) {
    if (SQLSTATE_REASONS[code]) return SQLSTATE_REASONS[code];
    if (/^[0-9A-Z]{5}$/.test(code) && code.slice(0, 2) in SQLSTATE_CLASSES) return SQLSTATE_CLASSES[code.slice(0, 2)] ?? code;
    if (ERRNO_REASONS[code]) return ERRNO_REASONS[code];
  }
  // Node's AggregateError of a connection attempt to several addresses (IPv4 and IPv6 of localhost).
  if (Array.isArray(e.errors) && e.errors.length > 0) return unavailableReason(e.errors[0]);
  const message = typeof e.message === 'string' ? e.message : '';
  for (const [re, reason] of MESSAGE_REASONS) if (re.test(message)) return reason;
  return undefined;
}

/** `err` as a PgUnavailable when it means the database failed (see the module comment), else `err` itself. */
export function fromPg(err: unknown): unknown {
  if (err instanceof PgUnavailable) return err;
  const reason = unavailableReason(err);
  if (reason === undefined) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new PgUnavailable(`PG_${reason}`, `PostgreSQL failed (${reason}): ${message}`, { cause: err });
}
