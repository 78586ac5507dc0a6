#!/usr/bin/env bash
# `npm run typecheck` and `npm run lint` side by side (tsc and eslint each use one core; the test command's machine
# has two): both always run to their end, their output is shown one after the other, and the script fails when
# either failed, naming it.
set -uo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npm run --silent typecheck >"$out/typecheck" 2>&1 &
typecheck=$!
npm run --silent lint >"$out/lint" 2>&1 &
lint=$!
wait "$typecheck"; typecheck_status=$?
wait "$lint"; lint_status=$?
echo "== npm run typecheck (exit $typecheck_status)"; cat "$out/typecheck"
echo "== npm run lint (exit $lint_status)"; cat "$out/lint"
failed=()
[ "$typecheck_status" -eq 0 ] || failed+=(typecheck)
[ "$lint_status" -eq 0 ] || failed+=(lint)
if [ "${#failed[@]}" -gt 0 ]; then echo "check: ${failed[*]} failed" >&2; exit 1; fi
