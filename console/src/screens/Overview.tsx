import { useEffect, useMemo } from 'react';
import { formatBytes, get } from '../api';
import { Chart, type ChartSeries } from '../Chart';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

/** GET /api/history (src/console/history.ts): traffic per interval (root only) and storage per bucket. */
interface HistoryData {
  intervalSeconds: number;
  traffic: null | Array<{
    at: number;
    seconds: number;
    requests: number;
    clientErrors: number;
    serverErrors: number;
    bytesIn: number;
    bytesOut: number;
    p50Ms: number | null;
    p99Ms: number | null;
  }>;
  storage: Array<{ at: number; buckets: Record<string, number> }>;
}

const perSecond = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const bytesPerSecond = (v: number): string => `${formatBytes(Math.round(v))}/s`;
const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v.toFixed(v >= 10 ? 0 : 1)} ms`);
const bytes = (v: number): string => formatBytes(Math.round(v));

/** The Overview's graphs: requests and errors, bytes, latency over the last hour; storage per bucket over days. */
function Graphs() {
  const { t } = useI18n();
  const { data, reload } = useLoad(() => get<HistoryData>('/api/history'), []);
  useEffect(() => {
    const timer = setInterval(reload, Math.max(10, Math.min(60, data?.intervalSeconds ?? 60)) * 1000);
    return () => clearInterval(timer);
  }, [reload, data?.intervalSeconds]);
  const charts = useMemo(() => {
    if (!data) return undefined;
    const tr = data.traffic ?? [];
    const x = tr.map((p) => p.at);
    const rate = (pick: (p: (typeof tr)[number]) => number): Array<number | null> => tr.map((p) => pick(p) / (p.seconds || 1));
    const requests: ChartSeries[] = [
      { label: t('requests/s'), values: rate((p) => p.requests) },
      { label: t('client errors/s'), values: rate((p) => p.clientErrors) },
      { label: t('server errors/s'), values: rate((p) => p.serverErrors) },
    ];
    const traffic: ChartSeries[] = [
      { label: t('received'), values: rate((p) => p.bytesIn) },
      { label: t('sent'), values: rate((p) => p.bytesOut) },
    ];
    const latency: ChartSeries[] = [
      { label: 'p50', values: tr.map((p) => p.p50Ms) },
      { label: 'p99', values: tr.map((p) => p.p99Ms) },
    ];
    const names = [...new Set(data.storage.flatMap((p) => Object.keys(p.buckets)))].sort();
    const storage: ChartSeries[] = names.map((n) => ({ label: n, values: data.storage.map((p) => p.buckets[n] ?? null) }));
    return { x, requests, traffic, latency, storageX: data.storage.map((p) => p.at), storage };
  }, [data, t]);
  if (!data || !charts) return <p className="muted">…</p>;
  return (
    <>
      {charts.x.length === 0 && data.traffic !== null && (
        <p className="muted small" data-testid="history-empty">
          {t('Granary records its traffic every {s} s; the graphs fill in from the second sample.', { s: data.intervalSeconds })}
        </p>
      )}
      <div className="charts" data-testid="overview-graphs">
        {charts.x.length > 0 && (
          <>
            <Chart testId="chart-requests" title={t('Requests and errors per second')} x={charts.x} series={charts.requests} format={perSecond} />
            <Chart testId="chart-bytes" title={t('Bytes in and out per second')} x={charts.x} series={charts.traffic} format={bytesPerSecond} binary />
            <Chart testId="chart-latency" title={t('Latency (p50, p99)')} x={charts.x} series={charts.latency} format={ms} />
          </>
        )}
        {charts.storage.length > 0 && <Chart testId="chart-storage" title={t('Storage per bucket')} x={charts.storageX} series={charts.storage} format={bytes} binary />}
      </div>
    </>
  );
}

interface OverviewData {
  buckets: Array<{ name: string; objects: number; bytes: number }>;
  totals: { buckets: number; objects: number; bytes: number };
  jobs: { waiting: number; running: number; notifying: number; done: number };
  disk: { freeBytes: number; totalBytes: number; reserveBytes: number; ok: boolean } | null;
  scrub: {
    enabled: boolean;
    running: boolean;
    current?: { startedAt: string; blobs: number; bytes: number };
    lastPass?: { finishedAt: string; blobs: number; corrupt: number };
    nextPassAt?: string;
  } | null;
  requests: {
    total: { requests: number; clientErrors: number; serverErrors: number };
    perSecond: { requests: number; clientErrors: number; serverErrors: number };
    windowSeconds: number;
  } | null;
  uptimeSeconds: number;
}

export function Overview() {
  const { t, date, lang } = useI18n();
  const { data, error } = useLoad(() => get<OverviewData>('/api/overview'), []);
  if (error) return <p className="error">{error}</p>;
  if (!data) return <p className="muted">…</p>;
  const max = Math.max(1, ...data.buckets.map((b) => b.bytes));
  const disk = data.disk;
  return (
    <section>
      <h2>{t('Overview')}</h2>
      <div className="cards">
        <div className="card stat">
          <span className="big">{data.totals.buckets}</span>
          {/* The count of buckets: "空间" in Chinese, not the menu's "空间管理". */}
          <span>{lang === 'zh' ? t('Bucket') : t('Buckets')}</span>
        </div>
        <div className="card stat">
          <span className="big">{data.totals.objects.toLocaleString()}</span>
          <span>{t('Objects')}</span>
        </div>
        <div className="card stat">
          <span className="big">{formatBytes(data.totals.bytes)}</span>
          <span>{t('Stored')}</span>
        </div>
        <div className="card stat">
          <span className="big">{data.jobs.waiting + data.jobs.running}</span>
          <span>{t('Jobs queued or running')}</span>
        </div>
        {disk && (
          <div className={disk.ok ? 'card stat' : 'card stat warn'}>
            <span className="big">{formatBytes(disk.freeBytes)}</span>
            <span>{t('Disk free of {total}', { total: formatBytes(disk.totalBytes) })}</span>
          </div>
        )}
      </div>
      <Graphs />
      {data.requests && (
        <>
          <h3>{t('Requests')}</h3>
          <p data-testid="request-rates">
            {data.requests.windowSeconds > 0
              ? t('{rps} requests/s, {eps} client errors/s, {sps} server errors/s over the last {s} s', {
                  rps: data.requests.perSecond.requests.toFixed(2),
                  eps: data.requests.perSecond.clientErrors.toFixed(2),
                  sps: data.requests.perSecond.serverErrors.toFixed(2),
                  s: data.requests.windowSeconds,
                })
              : t('Rates appear after the first 10 seconds.')}{' '}
            ·{' '}
            {t('{n} requests since the start, {c} client errors, {e} server errors', {
              n: data.requests.total.requests,
              c: data.requests.total.clientErrors,
              e: data.requests.total.serverErrors,
            })}
          </p>
        </>
      )}
      <h3>{t('Storage used per bucket')}</h3>
      <table className="grid">
        <tbody>
          {data.buckets.map((b) => (
            <tr key={b.name}>
              <td>
                <a href={`#/files/${encodeURIComponent(b.name)}`}>{b.name}</a>
              </td>
              <td className="bar-cell">
                <span className="bar" style={{ width: `${(100 * b.bytes) / max}%` }} />
              </td>
              <td className="num">{formatBytes(b.bytes)}</td>
              <td className="num">
                {b.objects.toLocaleString()} {t('objects')}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>{t('Jobs')}</h3>
      <p>
        {t('waiting')} {data.jobs.waiting} · {t('running')} {data.jobs.running} · {t('notifying')} {data.jobs.notifying} · {t('done')} {data.jobs.done}
      </p>
      {data.scrub && (
        <>
          <h3>{t('Scrub')}</h3>
          <p>
            {!data.scrub.enabled
              ? t('off')
              : data.scrub.running && data.scrub.current
                ? t('running: {blobs} blobs, {bytes} checked since {at}', {
                    blobs: data.scrub.current.blobs,
                    bytes: formatBytes(data.scrub.current.bytes),
                    at: date(data.scrub.current.startedAt),
                  })
                : t('idle')}
            {data.scrub.lastPass &&
              ` · ${t('last pass {at}: {blobs} blobs, {corrupt} corrupt', {
                at: date(data.scrub.lastPass.finishedAt),
                blobs: data.scrub.lastPass.blobs,
                corrupt: data.scrub.lastPass.corrupt,
              })}`}
            {data.scrub.nextPassAt && ` · ${t('next pass {at}', { at: date(data.scrub.nextPassAt) })}`}
          </p>
        </>
      )}
      <p className="muted small">
        {t('Prometheus metrics: /metrics on this listener.')} · {t('Up {h} h', { h: (data.uptimeSeconds / 3600).toFixed(1) })}
      </p>
    </section>
  );
}
