/**
 * File-name helpers shared by the magic variables (`$(ext)`, `$(fprefix)`, docs/development/kodo-protocol.md §3.2) and MIME detection by
 * extension (§3.1 `detectMime`). Pure string functions; no file system.
 */

/** The last path segment of `name` (text after the last `/` or `\`). */
function baseName(name: string): string {
  const cut = Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\'));
  return cut < 0 ? name : name.slice(cut + 1);
}

/**
 * Extension of `name` **with its leading dot** (`"a.tar.gz"` → `".gz"`), or `""` when there is none.
 * Only the last path segment counts; a leading dot (`".bashrc"`) or a trailing dot (`"a."`) is not an extension.
 */
export function extensionOf(name: string | undefined): string {
  if (!name) return '';
  const base = baseName(name);
  const dot = base.lastIndexOf('.');
  if (dot <= 0 || dot === base.length - 1) return '';
  return base.slice(dot);
}

/** `name` without the extension returned by `extensionOf` (`"photo.jpg"` → `"photo"`; `"README"` unchanged). */
export function stripExtension(name: string): string {
  const ext = extensionOf(name);
  return ext ? name.slice(0, name.length - ext.length) : name;
}
