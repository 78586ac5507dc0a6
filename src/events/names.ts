/**
 * Kodo's event notification vocabulary (developer.qiniu.com/kodo/8610/dev-event-notification and the `qiniu`
 * SDK's `BucketEventName`): the event names a rule may name, and the ones Granary emits.
 */

/** Every event name a rule may name: those of Kodo's documentation and of the Node SDK's `BucketEventName`. */
export const EVENT_NAMES = [
  'put',
  'mkfile',
  'delete',
  'copy',
  'move',
  'append',
  'disable',
  'enable',
  'deleteMarkerCreate',
  'predelete',
  'restore:completed',
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/**
 * The events Granary emits: `put` (form upload, fetch, mirror pull, pfop/saveas outputs), `mkfile` (v1 mkfile and
 * v2 multipart completion), `delete`, `copy`, `move`, `disable`/`enable` (chstatus), `restore:completed`
 * (restoreAr, which completes at once). `append`, `deleteMarkerCreate` and `predelete` are accepted in rules but
 * never happen (no appendable objects, no versioning).
 */
export const EMITTED_EVENTS: ReadonlySet<EventName> = new Set<EventName>([
  'put',
  'mkfile',
  'delete',
  'copy',
  'move',
  'disable',
  'enable',
  'restore:completed',
]);

export function isEventName(name: string): name is EventName {
  return (EVENT_NAMES as readonly string[]).includes(name);
}
