/** Plain-text tables and number formatting for the bench output. */

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(' | ');
  const rule = widths.map((w) => '-'.repeat(w)).join('-|-');
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** A number with `digits` decimals, or '—' for undefined/NaN. */
export function fmt(n: number | undefined, digits = 0): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const KiB = 1024;
export const MB = 1e6;
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
