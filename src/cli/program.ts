/**
 * The `granary` program before any command is added, and how every run of it ends: shared by the full command tree
 * (cli.ts `buildCli`) and the client entry (cli/start.ts), so both print the same help header and the same errors.
 */
import { Command } from 'commander';
import { isKodoError } from '../errors.js';

/** An empty `granary` program (name and description; commands are added by the cli/ modules). */
export function newProgram(): Command {
  return new Command('granary').description('Self-hosted object storage speaking the Qiniu Kodo API');
}

/**
 * Parses `argv` (process.argv: node, script, arguments) and runs the command. An error prints one line
 * `granary: <message>` on stderr (a catalogue error adds its HTTP status: `… (612)`) and exits 1.
 */
export async function runProgram(program: Command, argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const detail = isKodoError(err) ? `${err.message} (${err.status})` : (err as Error).message;
    process.stderr.write(`granary: ${detail}\n`);
    process.exit(1);
  }
}
