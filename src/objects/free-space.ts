/**
 * Free space on the data dir's file system, and the reserve below which uploads are refused up front
 * (GRANARY_MIN_FREE_BYTES). Readings come from statfs(2), cached for a second while the space is above the
 * reserve and read again on every check while it is below; a refusal is always made on a fresh reading, so uploads
 * resume as soon as space returns.
 */
import { statfs } from 'node:fs/promises';
import { Errors } from '../errors.js';

/** The reserve: a byte count, a percentage of the file system, or the smaller of both (the default). */
export interface FreeSpaceReserve {
  bytes?: number;
  percent?: number;
}

/** One reading, in bytes. `ok` is false when `freeBytes` is below `reserveBytes`. */
export interface SpaceReading {
  freeBytes: number;
  totalBytes: number;
  reserveBytes: number;
  ok: boolean;
}

/** Whether `r` leaves less than its reserve once `incomingBytes` more are written. */
function refuses(r: SpaceReading, incomingBytes: number): boolean {
  return r.freeBytes - incomingBytes < r.reserveBytes;
}

/** How long a reading above the reserve is reused, milliseconds. */
const CACHE_MS = 1000;

/** Formats a byte count for messages (`1.5 GiB`). */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export class FreeSpace {
  private last: { at: number; reading: SpaceReading } | undefined;
  private pending: Promise<SpaceReading | undefined> | undefined;

  /** `dir`: a directory on the watched file system (the data dir). */
  constructor(
    private readonly dir: string,
    private readonly reserve: FreeSpaceReserve,
  ) {}

  /** The reserve in bytes for a file system of `totalBytes`. */
  reserveBytes(totalBytes: number): number {
    const { bytes, percent } = this.reserve;
    const byPercent = percent === undefined ? undefined : Math.floor((totalBytes * percent) / 100);
    if (bytes !== undefined && byPercent !== undefined) return Math.min(bytes, byPercent);
    return bytes ?? byPercent ?? 0;
  }

  /** A current reading (undefined when statfs itself fails: the space is then unknown, nothing is refused). */
  async reading(): Promise<SpaceReading | undefined> {
    const now = Date.now();
    if (this.last && this.last.reading.ok && now - this.last.at < CACHE_MS) return this.last.reading;
    this.pending ??= this.read().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async read(): Promise<SpaceReading | undefined> {
    try {
      const st = await statfs(this.dir);
      const totalBytes = st.blocks * st.bsize;
      const freeBytes = st.bavail * st.bsize;
      const reserveBytes = this.reserveBytes(totalBytes);
      const reading = { freeBytes, totalBytes, reserveBytes, ok: freeBytes >= reserveBytes };
      this.last = { at: Date.now(), reading };
      return reading;
    } catch {
      return undefined;
    }
  }

  /**
   * Refuses (599 storageFull) when free space is below the reserve, or would be after writing `incomingBytes`
   * more (a declared Content-Length).
   */
  async require(incomingBytes = 0): Promise<void> {
    let r = await this.reading();
    if (!r || !refuses(r, incomingBytes)) return;
    // A cached reading may be up to CACHE_MS old: an upload is refused only on a fresh one, so it goes through as
    // soon as space has come back (a reading taken on a full disk is above a reserve of 0, hence cached).
    r = await this.read();
    if (!r || !refuses(r, incomingBytes)) return;
    const what = incomingBytes > 0 ? `${formatBytes(r.freeBytes)} free, ${formatBytes(incomingBytes)} incoming` : `${formatBytes(r.freeBytes)} free`;
    throw Errors.storageFull(`${what}, the reserve is ${formatBytes(r.reserveBytes)} (GRANARY_MIN_FREE_BYTES)`);
  }
}
