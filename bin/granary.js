#!/usr/bin/env node
// Entry point of the `granary` command: the compiled CLI lives in dist/ (built by `npm ci` through `prepare`).
import('../dist/cli.js').then((m) => m.main(process.argv)).catch((err) => {
  console.error(err);
  process.exit(1);
});
