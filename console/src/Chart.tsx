// A time-series chart (uPlot: canvas, small, no dependencies): x in Unix seconds, one line per series, values
// formatted by `format` on the y axis and in the legend. Redrawn when the data change; resized with its box.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { dateLocale, useI18n } from './i18n';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d'];

/**
 * Y-axis steps for values in bytes: 1, 2, 4 … 512 times 1, 1024, 1024² … so ticks fall on what formatBytes prints
 * whole (`512 KiB`, `1 MiB`, `2 MiB`), not on decimal steps shown in binary units (`976.6 KiB`).
 */
const BINARY_STEPS = [0, 1, 2, 3, 4, 5]
  .flatMap((k) => [1, 2, 4, 8, 16, 32, 64, 128, 256, 512].map((m) => m * 1024 ** k))
  .sort((a, b) => a - b);

export interface ChartSeries {
  label: string;
  values: Array<number | null>;
}

export function Chart({
  title,
  x,
  series,
  format,
  testId,
  binary = false,
}: {
  title: string;
  x: number[];
  series: ChartSeries[];
  format: (v: number) => string;
  testId: string;
  /** Values are bytes: ticks on binary steps (BINARY_STEPS). */
  binary?: boolean;
}) {
  const { lang, t } = useI18n();
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const locale = dateLocale(lang);
    const first = x[0] ?? 0;
    const last = x[x.length - 1] ?? 0;
    // One sample (a fresh install's storage: just "now"): the hour before it, so the point sits at the right edge
    // under a real time label instead of uPlot's degenerate range (every label midnight, the point at the left).
    const single = x.length > 0 && last - first < 1;
    const span = single ? 3600 : x.length > 1 ? last - first : 0;
    // Seconds on a span of minutes (a short sample interval), days on a span of days (storage).
    const time = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit', ...(span < 15 * 60 ? { second: '2-digit' } : {}) });
    const day = new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric' });
    const opts: uPlot.Options = {
      width: Math.max(el.clientWidth, 280),
      height: 180,
      series: [
        { label: t('Time'), value: (_u, v) => (v == null ? '–' : time.format(new Date(v * 1000))) },
        ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true, value: (_u: uPlot, v: number | null) => (v == null ? '–' : format(v)) })),
      ],
      axes: [
        { space: 110, values: (_u, ticks) => ticks.map((t) => (span > 2 * 86400 ? day : time).format(new Date(t * 1000))) },
        // Binary ticks are whole numbers of their unit: `1 MiB`, not `1.0 MiB`.
        { values: (_u, ticks) => ticks.map((t) => (binary ? format(t).replace(/\.0 /, ' ') : format(t))), size: 96, ...(binary ? { incrs: BINARY_STEPS } : {}) },
      ],
      scales: { x: { time: true, ...(single ? { range: (): [number, number] => [first - 3600, first + 60] } : {}) }, y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
      cursor: { drag: { x: false, y: false } },
      // The drawn time range, for tests and tools (the axes themselves are canvas): data-x-min / data-x-max, seconds.
      hooks: {
        draw: [
          (u) => {
            el.dataset.xMin = String(u.scales.x?.min ?? '');
            el.dataset.xMax = String(u.scales.x?.max ?? '');
          },
        ],
      },
      // Room on the right for the last time label, which is centred on its tick.
      padding: [8, 28, 0, 0],
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 280), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, series, format, lang, t, binary]);
  return (
    <div className="card chart" data-testid={testId}>
      <h4>{title}</h4>
      <div ref={box} className="chart-box" />
    </div>
  );
}
