/** `key` as a URL path: every `/`-separated segment percent-encoded, slashes kept (docs/development/kodo-protocol.md §11). */
export function keyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}
