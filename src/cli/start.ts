/**
 * Entry of the `granary` command (bin/granary.js → dist/cli/start.js): starts cheap for the client commands, which a
 * user (and a script) runs many times over. The client groups — the remote and transfer commands (cli/transfer.ts),
 * the entry commands `stat|rm|ls|cp|mv` (cli/entries.ts) and `iam` (cli/iam.ts) — load their stores and clients
 * only when a command runs, so a command of theirs runs on a program holding those groups alone: no module of the
 * server, the stores, the image and video commands or the log is loaded before its action asks for it (about a
 * third of a full start's CPU; test/unit/cli-start.test.ts checks the static imports and that each of these commands
 * is the full tree's). Every other argument (`serve`, `bucket …`, `keys …`, `--help`, an unknown command) runs the
 * full command tree (cli.ts), loaded then.
 */
import type { Command } from 'commander';
import { addEntryCommands } from './entries.js';
import { addIamCommands } from './iam.js';
import { newProgram, runProgram } from './program.js';
import { addTransferCommands } from './transfer.js';

/** The program of the client groups alone (their commands are the same objects' as in the full tree). */
export function buildClientCli(): Command {
  const program = newProgram();
  addEntryCommands(program);
  addIamCommands(program);
  addTransferCommands(program);
  return program;
}

/**
 * Runs `granary` for `argv` (process.argv: node, script, arguments): on the client program when `argv[2]` names one
 * of its commands, else on the full tree (cli.ts main). Errors print `granary: <message>` and exit 1.
 */
export async function main(argv: string[]): Promise<void> {
  const name = argv[2];
  const client = buildClientCli();
  if (name !== undefined && client.commands.some((c) => c.name() === name || c.aliases().includes(name))) return runProgram(client, argv);
  const { main: full } = await import('../cli.js');
  return full(argv);
}
