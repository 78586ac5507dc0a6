/**
 * The entry of the `granary` command (src/cli/start.ts): the client commands (remote, transfer, entry and IAM
 * commands) run on a program holding their groups alone. Each of them is the full tree's command (same help, options
 * and subcommands, down to the leaves), and the entry's static imports reach no module of the server, the stores,
 * the image and video commands or the log, and no package but commander and cli-progress: those load when an action
 * asks for them. Static imports are read by esbuild (what Node runs: `import type` is gone).
 */
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { buildCli } from '../../src/cli.js';
import { buildClientCli } from '../../src/cli/start.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The help of `cmd` and of every subcommand under it, by command path. */
function helpTree(cmd: Command, path = cmd.name()): Record<string, string> {
  const out: Record<string, string> = { [path]: cmd.helpInformation() };
  for (const sub of cmd.commands) Object.assign(out, helpTree(sub, `${path} ${sub.name()}`));
  return out;
}

/** The modules and packages `entry` imports statically, directly or through other modules (relative paths). */
async function staticImports(entry: string): Promise<{ modules: string[]; packages: string[] }> {
  const r = await build({
    entryPoints: [entry],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    write: false,
    outdir: 'out',
    splitting: true,
    metafile: true,
    logLevel: 'error',
  });
  const inputs = r.metafile.inputs;
  const seen = new Set([entry]);
  const packages = new Set<string>();
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const i of inputs[file]?.imports ?? []) {
      if (i.kind !== 'import-statement') continue;
      if (i.external) {
        if (!i.path.startsWith('node:')) packages.add(i.path);
      } else if (!seen.has(i.path)) {
        seen.add(i.path);
        queue.push(i.path);
      }
    }
  }
  return { modules: [...seen].sort(), packages: [...packages].sort() };
}

describe('the granary entry (cli/start.ts)', () => {
  it('each client command is the full command tree\'s, down to its subcommands', () => {
    const full = buildCli();
    const client = buildClientCli();
    expect(client.commands.length).toBeGreaterThan(20);
    for (const cmd of client.commands) {
      const same = full.commands.filter((c) => c.name() === cmd.name());
      expect(same, cmd.name()).toHaveLength(1);
      expect(helpTree(cmd), cmd.name()).toEqual(helpTree(same[0]!));
    }
    // The program itself prints the same header (granary --help runs the full tree).
    expect(client.name()).toBe(full.name());
    expect(client.description()).toBe(full.description());
  });

  it('loads no store, server, processing or log module before a command asks for it', async () => {
    const { modules, packages } = await staticImports('src/cli/start.ts');
    expect(modules).toContain('src/cli/transfer.ts');
    const heavy = modules.filter((m) => /^src\/(store|fops|server|routes|roles|s3api|console|workers|jobs|log)\b|^src\/cli\/context\.ts$/.test(m));
    expect(heavy, 'import these in the action that needs them (await import(…))').toEqual([]);
    expect(packages).toEqual(['cli-progress', 'commander']);
  });
});
