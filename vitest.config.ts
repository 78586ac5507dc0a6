import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time (Vitest's default on 2 cores is one): most e2e files wait on servers, subprocesses and
    // disks more than they compute. Vitest took 668–727 s this way against 776–1,028 s one file at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
