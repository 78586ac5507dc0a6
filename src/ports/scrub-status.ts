/**
 * What the rest of the server sees of the background scrubber (objects/scrubber.ts): its status, as /health/ready,
 * the console overview and the metrics show it. The Granary context names this interface, not the class.
 */

/** The scrubber's state as /health/ready shows it. */
export interface ScrubStatus {
  enabled: boolean;
  running: boolean;
  bytesPerSecond: number;
  intervalDays: number;
  current?: { startedAt: string; blobs: number; bytes: number };
  lastPass?: { startedAt: string; finishedAt: string; blobs: number; bytes: number; upgraded: number; corrupt: number };
  nextPassAt?: string;
}

/** The scrubber as the context holds it: only its status is read through `g.scrubber`. */
export interface ScrubStatusSource {
  status(): ScrubStatus;
}
