/**
 * The transfer commands alone, for tests that start the CLI many times: the same commander registration
 * (addTransferCommands, and addEntryCommands for the remote forms of stat/rm/ls/cp/mv, which loads no store
 * until an offline form runs) and the same error handling as src/cli.ts `main` (one line `granary: <message>`,
 * exit 1), without loading the server's modules (sharp, fastify, SQLite), which are most of a full start's CPU.
 * Tests also run the real entry (cli-entry.ts) to show the commands are registered there.
 */
import { Command } from 'commander';
import { addEntryCommands } from '../../src/cli/entries.js';
import { addTransferCommands } from '../../src/cli/transfer.js';

const program = new Command('granary');
addEntryCommands(program);
addTransferCommands(program);
try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`granary: ${(err as Error).message}\n`);
  process.exit(1);
}
