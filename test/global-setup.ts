/**
 * Vitest global setup of the contract and end-to-end files (vitest.config.ts): builds dist/ and the console app
 * once, before any file runs, when they are missing or older than their sources (test/helpers/build.ts). The
 * subprocess tests start `node bin/granary.js` (dist/), which starts in about half the time and CPU of the
 * TypeScript sources through tsx; building here rather than in a test file means no file reads dist/ while
 * another rewrites it.
 */
import { ensureConsoleBuilt, ensureDistBuilt } from './helpers/build.js';

export default function setup(): void {
  const t = Date.now();
  const built = [ensureDistBuilt() && 'dist/', ensureConsoleBuilt() && 'dist/console-ui/'].filter(Boolean);
  if (built.length > 0) console.log(`test/global-setup.ts: built ${built.join(' and ')} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}
