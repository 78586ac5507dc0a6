/** An entry address `<bucket>:<key>` (docs/development/kodo-protocol.md §0 EncodedEntryURI, decoded). */
export interface EntryRef {
  bucket: string;
  key: string;
}

/** `bucket:key` for messages. */
export function entryName(ref: EntryRef): string {
  return `${ref.bucket}:${ref.key}`;
}
