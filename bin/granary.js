#!/usr/bin/env node
// Entry point of the `granary` command: the compiled CLI lives in dist/ (built by `npm ci` through `prepare`).
// dist/cli/start.js runs the client commands without loading the server's modules, and the rest on the full tree.
import('../dist/cli/start.js').then((m) => m.main(process.argv)).catch((err) => {
  console.error(err);
  process.exit(1);
});
