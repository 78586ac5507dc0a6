/**
 * The layers of src/ hold: dependency-cruiser, run over src/ with the rules of .dependency-cruiser.cjs (the source of
 * truth; docs/development/architecture.md "Layers"), finds no import cycle (type-only imports count), no import of a
 * higher layer, no concrete store named outside the entry layer, no fastify below the handlers, and the transfer
 * client and the CLI kept apart from the listeners. `npm run lint` runs the same check (`depcruise src`).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the layers of src/', () => {
  it('dependency-cruiser finds no violation of .dependency-cruiser.cjs', async () => {
    // The rules' paths are relative to the repository root (`baseDir`).
    const options = await extractDepcruiseOptions(join(ROOT, '.dependency-cruiser.cjs'));
    const tsConfig = extractTSConfig(join(ROOT, 'tsconfig.json'));
    const out = await cruise(['src'], { ...options, baseDir: ROOT, tsConfig: { fileName: join(ROOT, 'tsconfig.json') }, validate: true }, {}, { tsConfig });
    const result = out.output as ICruiseResult;
    // Enough of the tree was read for the verdict to mean something (src/ has over 400 modules).
    expect(result.summary.totalCruised).toBeGreaterThan(400);
    const violations = result.summary.violations.map((v) => {
      const cycle = v.cycle?.map((step) => step.name).join(' → ');
      return `${v.rule.name}: ${v.from} → ${v.to}${cycle ? ` (cycle: ${v.from} → ${cycle})` : ''}`;
    });
    expect(violations, 'see .dependency-cruiser.cjs for what each rule means').toEqual([]);
  });
});
