// One bucket's settings: access (private, original protection, nrop), versioning (enable / suspend), cache max-age, mirror source, referer
// anti-leech, CORS rules, quota, image styles and separator, bound domains, lifecycle rules, event notifications.
// Every change is one call to PUT/POST/DELETE /api/buckets/<bucket>/…, answered with the server's error if refused.
import { useEffect, useState, type ReactNode } from 'react';
import { bucketPath, del, formatBytes, get, post, put } from '../api';
import { go } from '../App';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

interface Detail {
  name: string;
  owner: string;
  info: {
    private: number;
    protected: number;
    nrop: boolean;
    max_age: number;
    source: string;
    host: string;
    separator: string;
    styles: Record<string, string>;
    anti_leech_mode: number;
    refer_wl: string[] | null;
    refer_bl: string[] | null;
    no_refer: boolean;
    source_enabled: boolean;
    region: string;
    ctime: string;
  };
  usage: { objects: number; bytes: number };
  quota: { size: number; count: number };
  cors: unknown[];
  domains: string[];
  rules: Array<Record<string, string | number>>;
  events: Array<{ name: string; prefix: string; suffix: string; events: string[]; callback_urls: string[] }>;
  /** Never versioned: null (a bucket never returns to that once versioning is set). */
  versioning: 'Enabled' | 'Suspended' | null;
}

const DAY_FIELDS: Array<[string, string]> = [
  ['to_line_after_days', 'To IA after days'],
  ['to_intelligent_tiering_after_days', 'To Intelligent Tiering after days'],
  ['to_archive_ir_after_days', 'To archive direct after days'],
  ['to_archive_after_days', 'To archive after days'],
  ['to_deep_archive_after_days', 'To deep archive after days'],
  ['delete_after_days', 'Delete after days'],
];
const EVENT_NAMES = ['put', 'mkfile', 'delete', 'copy', 'move', 'disable', 'enable', 'restore:completed'];

/** The outcome of a card's last action, shown in that card (next to what it is about). */
interface CardStatus {
  card: string;
  text: string;
  failed: boolean;
}

function Card({ id, title, status, children }: { id: string; title: string; status: CardStatus | undefined; children: ReactNode }) {
  return (
    <div className="card" data-card={id}>
      <h3>{title}</h3>
      {children}
      {status?.card === id && (
        <p className={status.failed ? 'error' : 'note'} role={status.failed ? 'alert' : 'status'} data-testid="card-status">
          {status.text}
        </p>
      )}
    </div>
  );
}

export function BucketSettings({ bucket }: { bucket: string }) {
  const { t } = useI18n();
  const { data, error, reload } = useLoad(() => get<Detail>(bucketPath(bucket)), [bucket]);
  const [status, setStatus] = useState<CardStatus>();
  const [form, setForm] = useState<Record<string, string>>({});
  const [events, setEvents] = useState<string[]>(['put']);
  const f = (name: string): string => form[name] ?? '';
  const set = (name: string) => (e: { target: { value: string } }) => setForm((x) => ({ ...x, [name]: e.target.value }));

  useEffect(() => {
    if (!data) return;
    const referer = data.info.anti_leech_mode === 1 ? data.info.refer_wl : data.info.anti_leech_mode === 2 ? data.info.refer_bl : [];
    setForm((x) => ({
      ...x,
      maxAge: String(data.info.max_age),
      source: data.info.source,
      sourceHost: data.info.host,
      refMode: String(data.info.anti_leech_mode),
      refPattern: (referer ?? []).join(';'),
      refNoRefer: data.info.no_refer ? '1' : '0',
      refSource: data.info.source_enabled ? '1' : '0',
      cors: JSON.stringify(data.cors, null, 2),
      quotaSize: String(data.quota.size),
      quotaCount: String(data.quota.count),
      separator: data.info.separator,
    }));
  }, [data]);

  /** Runs a card's action; its outcome shows in that card; on success the form fields named in `clear` empty. */
  const act = async (card: string, fn: () => Promise<unknown>, clear: string[] = []): Promise<void> => {
    setStatus(undefined);
    try {
      await fn();
      setStatus({ card, text: t('Saved.'), failed: false });
      if (clear.length > 0) setForm((x) => ({ ...x, ...Object.fromEntries(clear.map((k) => [k, ''])) }));
      reload();
    } catch (err) {
      setStatus({ card, text: `${t('Failed')}: ${(err as Error).message}`, failed: true });
    }
  };
  const CARD_OF: Record<string, string> = { private: 'access', protection: 'access', nrop: 'access', separator: 'styles' };
  const setting = (name: string, body: unknown) => act(CARD_OF[name] ?? name, () => put(bucketPath(bucket, `/settings/${name}`), body));

  if (error) return <p className="error">{error}</p>;
  if (!data) return <p className="muted">…</p>;
  const info = data.info;

  return (
    <section>
      <div className="row between">
        <h2>
          {t('Bucket')} <a href={`#/files/${encodeURIComponent(bucket)}`}>{bucket}</a>
        </h2>
        <span className="muted">
          {t('{objects} objects, {bytes}', { objects: data.usage.objects.toLocaleString(), bytes: formatBytes(data.usage.bytes) })} · {t('Region')} {info.region}
        </span>
      </div>
      <div className="settings-grid">
        <Card id="access" title={t('Access')} status={status}>
          <label className="inline">
            <input type="checkbox" name="private" checked={info.private === 1} onChange={(e) => void setting('private', { private: e.target.checked })} /> {t('Private (downloads need a signed URL)')}
          </label>
          <label className="inline">
            <input type="checkbox" checked={info.protected === 1} onChange={(e) => void setting('protection', { on: e.target.checked })} /> {t('Original protection (only styles or signed URLs)')}
          </label>
          <label className="inline">
            <input type="checkbox" checked={info.nrop} onChange={(e) => void setting('nrop', { enabled: e.target.checked })} /> {t('Moderation (nrop) enabled')}
          </label>
        </Card>
        <Card id="versioning" title={t('Versioning')} status={status}>
          <p data-testid="versioning-state">
            {data.versioning === 'Enabled' ? t('Enabled: every overwrite and delete keeps the old version.') : data.versioning === 'Suspended' ? t('Suspended: writes replace the null version; versions already kept stay.') : t('Off: overwrites and deletes destroy the old bytes.')}
          </p>
          <div className="row">
            <button data-testid="versioning-enable" disabled={data.versioning === 'Enabled'} onClick={() => void setting('versioning', { status: 'Enabled' })}>
              {t('Enable')}
            </button>
            <button disabled={data.versioning !== 'Enabled'} onClick={() => void setting('versioning', { status: 'Suspended' })}>
              {t('Suspend')}
            </button>
          </div>
        </Card>
        <Card id="maxAge" title={t('Cache max-age')} status={status}>
          <div className="row">
            <input type="number" value={f('maxAge')} onChange={set('maxAge')} /> {t('seconds')}
            <button onClick={() => void setting('maxAge', { maxAge: f('maxAge') })}>{t('Save')}</button>
          </div>
        </Card>
        <Card id="source" title={t('Mirror source')} status={status}>
          <div className="row">
            <input placeholder="https://origin.example.com" value={f('source')} onChange={set('source')} />
            <input placeholder={t('Host header (optional)')} value={f('sourceHost')} onChange={set('sourceHost')} />
          </div>
          <div className="row">
            <button onClick={() => void setting('source', { url: f('source'), host: f('sourceHost') })}>{t('Save')}</button>
            <button onClick={() => void setting('source', { url: '' })}>{t('Remove')}</button>
          </div>
        </Card>
        <Card id="referer" title={t('Referer anti-leech')} status={status}>
          <div className="row">
            <select value={f('refMode')} onChange={set('refMode')}>
              <option value="0">{t('off')}</option>
              <option value="1">{t('whitelist')}</option>
              <option value="2">{t('blacklist')}</option>
            </select>
            <input placeholder="*.example.com;example.org" value={f('refPattern')} onChange={set('refPattern')} />
          </div>
          <label className="inline">
            <input type="checkbox" checked={f('refNoRefer') === '1'} onChange={(e) => setForm((x) => ({ ...x, refNoRefer: e.target.checked ? '1' : '0' }))} /> {t('Allow an empty Referer')}
          </label>
          <label className="inline">
            <input type="checkbox" checked={f('refSource') === '1'} onChange={(e) => setForm((x) => ({ ...x, refSource: e.target.checked ? '1' : '0' }))} /> {t('Apply on Granary’s own addresses too (not only CDN domains)')}
          </label>
          <button onClick={() => void setting('referer', { mode: f('refMode'), pattern: f('refPattern'), norefer: f('refNoRefer'), sourceEnabled: f('refSource') })}>{t('Save')}</button>
        </Card>
        <Card id="cors" title={t('CORS rules')} status={status}>
          <textarea value={f('cors')} onChange={set('cors')} placeholder='[{"allowed_origin":["*"],"allowed_method":["GET"]}]' />
          <button
            onClick={() =>
              void act('cors', async () => {
                let rules: unknown;
                try {
                  rules = JSON.parse(f('cors') || '[]');
                } catch (err) {
                  throw new Error(t('the rules are not valid JSON ({detail})', { detail: (err as Error).message }), { cause: err });
                }
                await put(bucketPath(bucket, '/settings/cors'), { rules });
              })
            }
          >
            {t('Save')}
          </button>
        </Card>
        <Card id="quota" title={t('Quota')} status={status}>
          <div className="row">
            <label>
              {t('Bytes (-1 = no limit)')}
              <input type="number" value={f('quotaSize')} onChange={set('quotaSize')} />
            </label>
            <label>
              {t('Objects (-1 = no limit)')}
              <input type="number" value={f('quotaCount')} onChange={set('quotaCount')} />
            </label>
          </div>
          <button onClick={() => void setting('quota', { size: f('quotaSize'), count: f('quotaCount') })}>{t('Save')}</button>
        </Card>
        <Card id="styles" title={t('Image styles')} status={status}>
          <table className="grid">
            <tbody>
              {Object.entries(info.styles).map(([name, pipeline]) => (
                <tr key={name}>
                  <td>{name}</td>
                  <td className="mono">{pipeline}</td>
                  <td>
                    <button className="danger" onClick={() => void act('styles', () => del(bucketPath(bucket, `/styles/${encodeURIComponent(name)}`)))}>
                      {t('Delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="row">
            <input placeholder={t('name')} value={f('styleName')} onChange={set('styleName')} />
            <input placeholder="imageView2/2/w/200" value={f('stylePipeline')} onChange={set('stylePipeline')} />
            <button onClick={() => void act('styles', () => put(bucketPath(bucket, `/styles/${encodeURIComponent(f('styleName'))}`), { pipeline: f('stylePipeline') }), ['styleName', 'stylePipeline'])}>{t('Add')}</button>
          </div>
          <div className="row">
            {t('Separator')} <input value={f('separator')} onChange={set('separator')} style={{ width: 60 }} />
            <button onClick={() => void setting('separator', { separator: f('separator') })}>{t('Save')}</button>
          </div>
        </Card>
        <Card id="domains" title={t('Download domains')} status={status}>
          <ul>
            {data.domains.map((d) => (
              <li key={d}>
                {d}{' '}
                <button className="link" onClick={() => void act('domains', () => del(bucketPath(bucket, `/domains/${encodeURIComponent(d)}`)))}>
                  {t('Remove')}
                </button>
              </li>
            ))}
          </ul>
          <div className="row">
            <input placeholder="img.example.com" value={f('domain')} onChange={set('domain')} />
            <button onClick={() => void act('domains', () => post(bucketPath(bucket, '/domains'), { domain: f('domain') }), ['domain'])}>{t('Bind')}</button>
          </div>
        </Card>
        <Card id="rules" title={t('Lifecycle rules')} status={status}>
          <table className="grid">
            <tbody>
              {data.rules.map((r) => (
                <tr key={String(r.name)}>
                  <td>{r.name}</td>
                  <td className="mono">{r.prefix || '*'}</td>
                  <td className="small">
                    {DAY_FIELDS.filter(([k]) => Number(r[k]) > 0)
                      .map(([k, label]) => `${t(label)} ${r[k]}`)
                      .join(', ')}
                  </td>
                  <td>
                    <button className="danger" onClick={() => void act('rules', () => del(bucketPath(bucket, `/rules/${encodeURIComponent(String(r.name))}`)))}>
                      {t('Delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="row">
            <input placeholder={t('name')} value={f('ruleName')} onChange={set('ruleName')} />
            <input placeholder={t('prefix')} value={f('rulePrefix')} onChange={set('rulePrefix')} />
          </div>
          {DAY_FIELDS.map(([k, label]) => (
            <div className="row" key={k}>
              <span style={{ width: 200 }}>{t(label)}</span>
              <input type="number" min={0} value={f(k)} onChange={set(k)} style={{ width: 90 }} />
            </div>
          ))}
          <button
            onClick={() =>
              void act('rules', () => post(bucketPath(bucket, '/rules'), { name: f('ruleName'), prefix: f('rulePrefix'), ...Object.fromEntries(DAY_FIELDS.map(([k]) => [k, f(k) || '0'])) }), ['ruleName', 'rulePrefix', ...DAY_FIELDS.map(([k]) => k)])
            }
          >
            {t('Add rule')}
          </button>
        </Card>
        <Card id="events" title={t('Event notifications')} status={status}>
          <table className="grid">
            <tbody>
              {data.events.map((e) => (
                <tr key={e.name}>
                  <td>{e.name}</td>
                  <td className="small">
                    {e.prefix || '*'}…{e.suffix} → {e.events.map((n) => t(n)).join(', ')}
                  </td>
                  <td className="mono small">{e.callback_urls.join(' ')}</td>
                  <td>
                    <button className="danger" onClick={() => void act('events', () => del(bucketPath(bucket, `/events/${encodeURIComponent(e.name)}`)))}>
                      {t('Delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="row">
            <input placeholder={t('name')} value={f('evName')} onChange={set('evName')} />
            <input placeholder={t('prefix')} value={f('evPrefix')} onChange={set('evPrefix')} />
            <input placeholder={t('suffix')} value={f('evSuffix')} onChange={set('evSuffix')} />
          </div>
          <div className="row">
            {EVENT_NAMES.map((n) => (
              <label className="inline" key={n}>
                <input type="checkbox" checked={events.includes(n)} onChange={(e) => setEvents((x) => (e.target.checked ? [...x, n] : x.filter((y) => y !== n)))} /> {t(n)}
              </label>
            ))}
          </div>
          <div className="row">
            <input placeholder="https://hooks.example.com/granary" value={f('evUrl')} onChange={set('evUrl')} />
            <button
              onClick={() =>
                void act('events', () =>
                  post(bucketPath(bucket, '/events'), { name: f('evName'), prefix: f('evPrefix'), suffix: f('evSuffix'), events, callbackUrls: f('evUrl').split(/[;\s]+/) }),
                  ['evName', 'evPrefix', 'evSuffix', 'evUrl'],
                )
              }
            >
              {t('Add rule')}
            </button>
          </div>
        </Card>
        <Card id="delete" title={t('Delete bucket')} status={status}>
          <p className="muted">{t('Only an empty bucket can be deleted.')}</p>
          <button
            className="danger"
            onClick={() => {
              if (!window.confirm(t('Delete bucket {name}? Only an empty bucket can be deleted.', { name: bucket }))) return;
              void del(bucketPath(bucket))
                .then(() => go('buckets'))
                .catch((err: unknown) => setStatus({ card: 'delete', text: `${t('Failed')}: ${(err as Error).message}`, failed: true }));
            }}
          >
            {t('Delete bucket')}
          </button>
        </Card>
      </div>
    </section>
  );
}
