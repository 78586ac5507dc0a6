/**
 * The servers and the load generator run as plain JavaScript, like `granary serve` runs dist/: src/ and bench/
 * are transpiled (no type check; the sources are isolatedModules-clean since tsx/vitest run them) into a temp
 * directory, so no TypeScript loader thread sits in the measured processes (tsx's adds ~50 MB of RSS).
 */
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Transpiles `<root>/src` and `<root>/bench` into `outDir` (same layout, `.js`), runnable with `node`. */
export async function transpileForBench(root: string, outDir: string): Promise<void> {
  for (const sub of ['src', 'bench']) {
    for await (const file of tsFiles(join(root, sub))) {
      const out = ts.transpileModule(await readFile(file, 'utf8'), {
        fileName: file,
        compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, esModuleInterop: true },
      });
      const target = join(outDir, relative(root, file)).replace(/\.ts$/, '.js');
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, out.outputText);
    }
  }
  await writeFile(join(outDir, 'package.json'), '{"type":"module"}\n');
  await symlink(join(root, 'node_modules'), join(outDir, 'node_modules'), 'dir');
}
