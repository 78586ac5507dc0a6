// The console API client: JSON over fetch, same origin, the session cookie sent by the browser, the CSRF token
// (from sign-in or GET /api/session, kept in memory only) echoed in X-Granary-CSRF on every non-GET call.

let csrf = '';

/** An API failure: the HTTP status and the server's `{"error": …}` message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Called when a call answers 401 (the session ended): the app goes back to the sign-in screen. */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-granary-csrf'] = csrf;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = { error: text };
  }
  if (!res.ok) {
    const message = (data as { error?: string } | undefined)?.error ?? res.statusText;
    if (res.status === 401 && path !== '/api/session') onSignedOut();
    throw new ApiError(res.status, message);
  }
  return data as T;
}

export const get = <T>(path: string): Promise<T> => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown): Promise<T> => call<T>('POST', path, body ?? {});
export const put = <T>(path: string, body?: unknown): Promise<T> => call<T>('PUT', path, body ?? {});
export const patch = <T>(path: string, body?: unknown): Promise<T> => call<T>('PATCH', path, body ?? {});
export const del = <T>(path: string): Promise<T> => call<T>('DELETE', path);

export interface Session {
  accessKey: string;
  root: boolean;
  csrf: string;
  expiresIn: number;
}

export async function signIn(accessKey: string, secretKey: string): Promise<Session> {
  const s = await post<Session>('/api/session', { accessKey, secretKey });
  csrf = s.csrf;
  return s;
}

/** The live session, or undefined when signed out (the server answers 200 `{signedIn: false}`: no error logged). */
export async function currentSession(): Promise<Session | undefined> {
  try {
    const s = await get<Session & { signedIn: boolean }>('/api/session');
    if (!s.signedIn) return undefined;
    csrf = s.csrf;
    return s;
  } catch {
    return undefined;
  }
}

export async function signOut(): Promise<void> {
  await del('/api/session');
  csrf = '';
}

/** `/api/buckets/<bucket>` + rest, the bucket name escaped. */
export const bucketPath = (bucket: string, rest = ''): string => `/api/buckets/${encodeURIComponent(bucket)}${rest}`;

/**
 * `/api/iam<rest>` in the account `account` (the root session's choice; '' = the session's own), with `params`
 * added to the query.
 */
export function iamPath(rest: string, account: string, params: Record<string, string> = {}): string {
  const q = new URLSearchParams({ ...(account ? { account } : {}), ...params }).toString();
  return `/api/iam${rest}${q ? `?${q}` : ''}`;
}

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

