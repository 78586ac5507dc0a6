/** The data-dir flags of the offline commands (light: loads no store, so commands register cheaply). */
import type { Command } from 'commander';

/**
 * Adds the data-dir flags shared by every command. Offline commands refuse a data dir that does not exist
 * (requireDataDir) and take `--create-data-dir`; `serve` (`creates`) makes it as it always did.
 */
export function withDataDir(cmd: Command, { creates = false }: { creates?: boolean } = {}): Command {
  if (creates) cmd.option('--data-dir <dir>', 'data directory (GRANARY_DATA_DIR, default ./data; created when missing)');
  else {
    cmd
      .option('--data-dir <dir>', 'data directory (GRANARY_DATA_DIR, default ./data); it must exist')
      .option('--create-data-dir', 'create the data dir when it does not exist (otherwise refused)');
  }
  return cmd
    .option('--metadata <url>', 'metadata database: postgres://… (GRANARY_METADATA, default: SQLite in the data dir)')
    .option('--access-key <ak>', 'root AccessKey (GRANARY_ACCESS_KEY)')
    .option('--secret-key <sk>', 'root SecretKey (GRANARY_SECRET_KEY)');
}
