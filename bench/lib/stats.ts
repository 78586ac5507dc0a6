/** Latency summaries (milliseconds). */
export interface LatencySummary {
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** Nearest-rank percentile of an ascending-sorted array. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? NaN;
}

export function summarize(latenciesMs: number[]): LatencySummary {
  const sorted = Float64Array.from(latenciesMs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : NaN,
    max: sorted.length ? (sorted[sorted.length - 1] ?? NaN) : NaN,
  };
}

/** Elapsed milliseconds since a `process.hrtime.bigint()` reading. */
export function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}
