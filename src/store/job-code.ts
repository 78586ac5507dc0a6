/**
 * The public state code of a job (ports/job-queue.ts, docs/development/kodo-protocol.md §9 prefop `code`) as both backends store it:
 * the task table keeps the state and, once done, the final code; 1 and 2 are derived from the state, so the
 * shared life cycle (store/sql/queue-table.ts) never touches codes.
 */
import type { JobState } from '../ports/job-queue.js';

/** The public code of a job in `state`: 1 waiting, 2 running or notifying, else the stored final code (0/3/4). */
export function jobCode(state: JobState, finalCode: number | null): number {
  if (state === 'waiting') return 1;
  if (state === 'done') return finalCode ?? 0;
  return 2;
}

/**
 * The SQL condition of the job-list filter `code` on the indexed `state` column (and `code` for final codes):
 * `placeholder` (`?` on SQLite, `$n` on PostgreSQL) stands for the code where the condition needs it.
 */
export function codeCondition(code: number, placeholder: string): { sql: string; needsValue: boolean } {
  if (code === 1) return { sql: "state = 'waiting'", needsValue: false };
  if (code === 2) return { sql: "state IN ('running', 'notifying')", needsValue: false };
  return { sql: `state = 'done' AND code = ${placeholder}`, needsValue: true };
}
