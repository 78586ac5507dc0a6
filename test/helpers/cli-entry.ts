/**
 * The CLI's real entry over the TypeScript sources (src/cli.ts `main`), as bin/granary.js runs dist/cli.js: bundled
 * by test/helpers/transfer.ts for the transfer tests, which start the CLI many times.
 */
import { main } from '../../src/cli.js';

await main(process.argv);
