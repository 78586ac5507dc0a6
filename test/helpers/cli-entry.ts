/** Runs the CLI from TypeScript sources (tests start the server as a subprocess through this file with tsx). */
import { main } from '../../src/cli.js';

await main(process.argv);
