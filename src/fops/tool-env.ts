/**
 * The environment external tools (ffmpeg, heif-convert) run with: the server's own, without the variables that hold
 * secrets (GRANARY_MASTER_KEY, the master key of encryption at rest; GRANARY_SECRET_KEY, the root SecretKey), so a
 * tool, or anything it runs, never sees them (docs/reference/encryption.md, "Key handling").
 */

/** Variables never passed to a child process. */
const SECRET_VARS = ['GRANARY_MASTER_KEY', 'GRANARY_SECRET_KEY'] as const;

/** A copy of `env` (default process.env) without SECRET_VARS. */
export function toolEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of SECRET_VARS) delete out[name];
  return out;
}
