/**
 * The WorkflowTemplateStore port: named workflow templates (docs/development/kodo-protocol.md §3.1 `persistentWorkflowTemplateID`, §9.1
 * `workflowTemplateID`), each a saved list of persistent-processing commands with an optional pipeline and notify
 * URL. A template belongs to one account (its owner's AccessKey): names are unique per owner, and every lookup
 * names the owner, so an account never sees or uses another account's templates.
 *
 * The store knows nothing of Kodo: `fops` is opaque text (validated by jobs/workflow-templates.ts).
 * Implementation: store/sql/workflow-templates.ts, on SQLite and PostgreSQL; every read goes to the store, so a
 * change made by another process (the CLI on the same data dir, another node) is seen at once.
 */

/** A stored template. Times are Unix milliseconds. */
export interface WorkflowTemplateRecord {
  /** AccessKey of the account the template belongs to. */
  owner: string;
  name: string;
  /** The commands (`;`-separated, each may end with `|saveas/<EncodedEntryURI>`). */
  fops: string;
  /** Pipeline of the jobs it starts (absent: the request's, else `0.default`). */
  pipeline?: string;
  /** Notify URL of the jobs it starts (absent: the request's, else none). */
  notifyUrl?: string;
  createdMs: number;
  updatedMs: number;
}

export interface WorkflowTemplateStore {
  /**
   * Creates the template, or replaces the fields of the owner's template of that name (its `createdMs` kept);
   * answers which happened.
   */
  put(template: WorkflowTemplateRecord): Promise<'created' | 'updated'>;
  get(owner: string, name: string): Promise<WorkflowTemplateRecord | undefined>;
  /** The owner's templates by name; without an owner, every template by owner then name. */
  list(owner?: string): Promise<WorkflowTemplateRecord[]>;
  /** False when the owner has no template of that name. */
  delete(owner: string, name: string): Promise<boolean>;
}
