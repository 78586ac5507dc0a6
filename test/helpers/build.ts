/**
 * The built server the subprocess tests start: `dist/` (`tsc -p tsconfig.build.json`, what `npm run build` and
 * `npm ci` make) run through `bin/granary.js`, and the console app in `dist/console-ui/` (Vite). Each is rebuilt
 * when missing or older than its sources, so a test never runs a stale build. test/global-setup.ts calls both
 * once before the end-to-end files start (no two files rebuild at once, none reads dist/ while it is written).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Newest modification time of the files under `dir` (or of `dir` itself when it is a file), milliseconds. */
export function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let t = 0;
  for (const e of readdirSync(path, { withFileTypes: true })) t = Math.max(t, newest(join(path, e.name)));
  return t;
}

/** Modification time of `file`, or 0 when it does not exist. */
function mtime(file: string): number {
  return existsSync(file) ? statSync(file).mtimeMs : 0;
}

/**
 * Compiles src/ into dist/ unless dist/cli.js is newer than every file of src/ and the tsconfig files (tsc writes
 * every output file on each build, so dist/cli.js is as old as the last build). Answers whether it built.
 */
export function ensureDistBuilt(): boolean {
  const sources = Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'tsconfig.json')), newest(join(ROOT, 'tsconfig.build.json')));
  if (mtime(join(ROOT, 'dist', 'cli.js')) >= sources) return false;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  return true;
}

/** Builds the console app with Vite unless dist/console-ui/index.html is newer than console/. Answers whether it built. */
export function ensureConsoleBuilt(): boolean {
  if (mtime(join(ROOT, 'dist', 'console-ui', 'index.html')) >= newest(join(ROOT, 'console'))) return false;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'console/vite.config.ts'], { cwd: ROOT, stdio: 'inherit' });
  return true;
}
