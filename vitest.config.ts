import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time (Vitest's default on 2 cores is one): most e2e files wait on servers, subprocesses and
    // disks more than they compute. Vitest took 668–727 s this way against 776–1,028 s one file at a time (with a
    // process per file and the subprocess servers run through tsx); three at a time took 479 s against 454 s with
    // two, in one run each with isolate false and dist/.
    maxWorkers: 2,
    // Each forked process runs file after file and keeps the modules it has imported: with a fresh process per file,
    // importing the server's module graph (src/ through Vite, about 400 modules) took 2–5 s of every e2e file.
    // Files start their own servers, temp dirs and subprocesses and stop them in afterAll, and leave process.env
    // alone; the spies some files set on process.stdout are restored in the same test.
    isolate: false,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Contract and end-to-end files: dist/ and the console app built first (test/global-setup.ts), which the
      // unit files need not wait for.
      { extends: true, test: { name: 'e2e', include: ['test/contract/**/*.test.ts', 'test/e2e/**/*.test.ts'], globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
