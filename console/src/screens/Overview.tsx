import { formatBytes, get } from '../api';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

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
  const { t } = useI18n();
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
          <span>{t('Buckets')}</span>
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
                    at: new Date(data.scrub.current.startedAt).toLocaleString(),
                  })
                : t('idle')}
            {data.scrub.lastPass &&
              ` · ${t('last pass {at}: {blobs} blobs, {corrupt} corrupt', {
                at: new Date(data.scrub.lastPass.finishedAt).toLocaleString(),
                blobs: data.scrub.lastPass.blobs,
                corrupt: data.scrub.lastPass.corrupt,
              })}`}
            {data.scrub.nextPassAt && ` · ${t('next pass {at}', { at: new Date(data.scrub.nextPassAt).toLocaleString() })}`}
          </p>
        </>
      )}
      <p className="muted small">
        {t('Prometheus metrics: /metrics on this listener.')} · {t('Up {h} h', { h: (data.uptimeSeconds / 3600).toFixed(1) })}
      </p>
    </section>
  );
}
