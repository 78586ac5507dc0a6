// Processing: pfop jobs (filter by pipeline and code 0–4, items, errors, the notify state), submitting a pfop,
// pipelines with their concurrency (changed by the root key), workflow templates, async fetch tasks.
import { Fragment, useState, type ReactNode } from 'react';
import { del, get, post, put, type Session } from '../api';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';
import type { BucketRow } from './Buckets';

interface JobItem {
  cmd: string;
  code: number;
  desc: string;
  error: string;
  key: string;
}
interface Job {
  id: string;
  pipeline: string;
  code: number;
  desc: string;
  inputBucket: string;
  inputKey: string;
  creationDate: string;
  taskFrom: string;
  state: string;
  attempts: number;
  notifyUrl: string;
  items: JobItem[];
}
interface Pipeline {
  name: string;
  concurrency: number;
  createdMs: number;
}
interface Template {
  name: string;
  fops: string;
  pipeline?: string;
  notifyUrl?: string;
  updatedMs: number;
}
interface FetchTask {
  id: string;
  state: string;
  attempts: number;
  request: { url?: string; bucket?: string; key?: string } | null;
  result: { key?: string; fsize?: number; error?: string; code?: number } | null;
  createdMs: number;
}

const CODES: Array<[string, string]> = [
  ['', 'any code'],
  ['0', '0 succeeded'],
  ['1', '1 waiting'],
  ['2', '2 running'],
  ['3', '3 failed'],
  ['4', '4 notification failed'],
];

/** A job's or item's code in words (Kodo's `desc` stays in the tooltip). */
const CODE_LABELS: Record<number, string> = { 0: 'Succeeded', 1: 'Waiting', 2: 'Running', 3: 'Failed', 4: 'Notification failed' };
const CODE_CLASS: Record<number, string> = { 0: 'ok', 1: 'muted', 2: 'muted', 3: 'bad', 4: 'bad' };

function CodeBadge({ code, desc }: { code: number; desc: string }) {
  const { t } = useI18n();
  return (
    <span className={`badge ${CODE_CLASS[code] ?? ''}`} title={`${code} ${desc}`} data-code={code}>
      {t(CODE_LABELS[code] ?? String(code))}
    </span>
  );
}

/** URL-safe base64 of UTF-8 text (Kodo's EncodedEntryURI alphabet: `-` and `_`, padding kept). */
export function urlsafeBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_');
}

/** The bucket a command's output went to: its `saveas` target's bucket, else the job's input bucket. */
function outputBucket(cmd: string, inputBucket: string): string {
  const m = /\|saveas\/([A-Za-z0-9_=-]+)/.exec(cmd);
  if (!m?.[1]) return inputBucket;
  try {
    const bin = atob(m[1].replace(/-/g, '+').replace(/_/g, '/'));
    const entry = new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
    const colon = entry.indexOf(':');
    return colon > 0 ? entry.slice(0, colon) : entry;
  } catch {
    return inputBucket;
  }
}

/** The file extension a command's output gets in a proposed saveas key. */
function extensionOf(cmd: string): string {
  const [name = '', arg = ''] = cmd.split('/');
  const format = /\/format\/([a-z0-9]+)/.exec(cmd)?.[1];
  if (format) return `.${format}`;
  if (name === 'avinfo' || name === 'imageInfo' || name === 'exif') return '.json';
  if ((name === 'vframe' || name === 'avthumb' || name === 'vsample') && /^[a-z0-9]+$/.test(arg)) return `.${arg}`;
  return '';
}

/**
 * `fops` with a `saveas` added to each command that has none: `<bucket>:<prefix><key stem>[-n]<ext>`. Without one
 * Kodo (and Granary) store a pfop's output under a hash-named key at the bucket's root.
 */
export function withSaveas(fops: string, bucket: string, key: string, prefix: string): string {
  const cmds = fops.split(';').map((c) => c.trim()).filter(Boolean);
  const ext = /\.[^./]*$/.exec(key)?.[0] ?? '';
  const stem = key.slice(0, key.length - ext.length);
  return cmds
    .map((cmd, i) => {
      if (cmd.includes('|saveas/')) return cmd;
      // An output format the command names, else the source's extension (an image command keeps the format).
      const name = `${prefix}${stem}${cmds.length > 1 ? `-${i + 1}` : ''}${extensionOf(cmd) || ext}`;
      return `${cmd}|saveas/${urlsafeBase64(`${bucket}:${name}`)}`;
    })
    .join(';');
}

function Tabs({ tabs, active, onChange }: { tabs: Array<[string, string]>; active: string; onChange: (id: string) => void }) {
  return (
    <div className="tabs" role="tablist">
      {tabs.map(([id, label]) => (
        <button key={id} role="tab" className={active === id ? 'active' : ''} onClick={() => onChange(id)}>
          {label}
        </button>
      ))}
    </div>
  );
}

function Jobs({ pipelines }: { pipelines: Pipeline[] }) {
  const { t, date } = useI18n();
  const [pipeline, setPipeline] = useState('');
  const [code, setCode] = useState('');
  const [befores, setBefores] = useState<string[]>(['']);
  const [open, setOpen] = useState<string>();
  const before = befores[befores.length - 1] ?? '';
  const { data, error, reload } = useLoad(() => {
    const q = new URLSearchParams({ pipeline, code, before });
    return get<{ jobs: Job[]; next?: number }>(`/api/jobs?${q.toString()}`);
  }, [pipeline, code, before]);
  return (
    <>
      <div className="row">
        <select aria-label={t('Pipeline')} value={pipeline} onChange={(e) => (setPipeline(e.target.value), setBefores(['']))}>
          <option value="">{t('any pipeline')}</option>
          {pipelines.map((p) => (
            <option key={p.name}>{p.name}</option>
          ))}
        </select>
        <select aria-label={t('Code')} value={code} onChange={(e) => (setCode(e.target.value), setBefores(['']))}>
          {CODES.map(([v, label]) => (
            <option key={v} value={v}>
              {t(label)}
            </option>
          ))}
        </select>
        <button onClick={reload}>{t('Refresh')}</button>
      </div>
      {error && <p className="error">{error}</p>}
      <table className="grid">
        <thead>
          <tr>
            <th>{t('persistentId')}</th>
            <th>{t('Source')}</th>
            <th>{t('Pipeline')}</th>
            <th>{t('Code')}</th>
            <th>{t('State')}</th>
            <th>{t('Created')}</th>
          </tr>
        </thead>
        <tbody>
          {data?.jobs.map((j) => (
            <Fragment key={j.id}>
              <tr data-job={j.id}>
                <td>
                  <button className="link mono" onClick={() => setOpen(open === j.id ? undefined : j.id)}>
                    {j.id}
                  </button>
                </td>
                <td>
                  {j.inputBucket}:{j.inputKey}
                </td>
                <td>{j.pipeline}</td>
                <td>
                  <CodeBadge code={j.code} desc={j.desc} />
                </td>
                <td>
                  {t(j.state)}
                  {j.notifyUrl && <span className="tag">notify</span>}
                </td>
                <td>{date(j.creationDate)}</td>
              </tr>
              {open === j.id && (
                <tr>
                  <td colSpan={6}>
                    <table className="grid">
                      <tbody>
                        {j.items.map((it, i) => (
                          <tr key={i}>
                            <td className="mono small">{it.cmd}</td>
                            <td>
                              <CodeBadge code={it.code} desc={it.desc} />
                            </td>
                            <td>
                              {it.key && (
                                <a href={`#/files/${encodeURIComponent(outputBucket(it.cmd, j.inputBucket))}?prefix=${encodeURIComponent(it.key)}`} data-testid="job-result">
                                  {it.key}
                                </a>
                              )}
                            </td>
                            <td className="error small">{it.error}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                    <p className="small muted">
                      {t('From')} {j.taskFrom} · {t('attempts')} {j.attempts} {j.notifyUrl && `· notify ${j.notifyUrl}`}
                    </p>
                  </td>
                </tr>
              )}
            </Fragment>
          ))}
          {data?.jobs.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                {t('No jobs.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="row pager">
        <button disabled={befores.length <= 1} onClick={() => setBefores(['']) }>
          {t('Newest')}
        </button>
        <button disabled={data?.next === undefined} onClick={() => data?.next !== undefined && setBefores((b) => [...b, String(data.next)])}>
          {t('Older')}
        </button>
      </div>
    </>
  );
}

function Form({ children, onSubmit }: { children: ReactNode; onSubmit: () => Promise<unknown> }) {
  const { t } = useI18n();
  const [message, setMessage] = useState('');
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        setMessage('');
        onSubmit().then(
          (m) => setMessage(typeof m === 'string' ? m : t('Saved.')),
          (err: unknown) => setMessage(`${t('Failed')}: ${(err as Error).message}`),
        );
      }}
    >
      {children}
      {message && <p className={message.startsWith(t('Failed')) ? 'error' : 'note'}>{message}</p>}
    </form>
  );
}

function SubmitPfop({ buckets, pipelines }: { buckets: BucketRow[]; pipelines: Pipeline[] }) {
  const { t } = useI18n();
  const [v, setV] = useState({ bucket: '', key: '', fops: 'avinfo', pipeline: '', notifyUrl: '', force: false, saveas: true, prefix: 'processed/' });
  const set = (name: string) => (e: { target: { value: string } }) => setV((x) => ({ ...x, [name]: e.target.value }));
  const bucket = v.bucket || buckets[0]?.name || '';
  const fops = v.saveas && v.key ? withSaveas(v.fops, bucket, v.key, v.prefix) : v.fops;
  return (
    <Form
      onSubmit={async () => {
        const r = await post<{ persistentId: string }>('/api/jobs', { bucket, key: v.key, fops, pipeline: v.pipeline, notifyUrl: v.notifyUrl, force: v.force });
        return `${t('persistentId')} ${r.persistentId}`;
      }}
    >
      <h3>{t('Submit a pfop')}</h3>
      <div className="row">
        <select name="bucket" value={bucket} onChange={set('bucket')}>
          {buckets.map((b) => (
            <option key={b.name}>{b.name}</option>
          ))}
        </select>
        <input name="key" placeholder={t('Key')} value={v.key} onChange={set('key')} required />
      </div>
      <label>
        fops
        <input name="fops" value={v.fops} onChange={set('fops')} placeholder="avthumb/mp4;vframe/jpg/offset/3" required />
      </label>
      <div className="row">
        <label className="inline">
          <input type="checkbox" name="saveas" checked={v.saveas} onChange={(e) => setV((x) => ({ ...x, saveas: e.target.checked }))} /> {t('Save the results under')}
        </label>
        <input name="saveasPrefix" value={v.prefix} onChange={set('prefix')} disabled={!v.saveas} style={{ width: 160 }} />
      </div>
      <p className="small muted">
        {v.saveas
          ? t('Commands without their own saveas get one: {bucket}:{prefix}<key>…', { bucket, prefix: v.prefix })
          : t('Without saveas the results go to the bucket root under hash-named keys (as on Kodo).')}
      </p>
      {v.key && (
        <p className="mono small" data-testid="pfop-fops">
          {fops}
        </p>
      )}
      <div className="row">
        <select value={v.pipeline} onChange={set('pipeline')}>
          <option value="">0.default</option>
          {pipelines.map((p) => (
            <option key={p.name}>{p.name}</option>
          ))}
        </select>
        <input placeholder="notifyURL" value={v.notifyUrl} onChange={set('notifyUrl')} />
        <label className="inline">
          <input type="checkbox" checked={v.force} onChange={(e) => setV((x) => ({ ...x, force: e.target.checked }))} /> force
        </label>
      </div>
      <button type="submit" className="primary">
        {t('Submit')}
      </button>
    </Form>
  );
}

function Pipelines({ pipelines, root, reload }: { pipelines: Pipeline[]; root: boolean; reload: () => void }) {
  const { t, date } = useI18n();
  const [name, setName] = useState('');
  const [concurrency, setConcurrency] = useState('2');
  return (
    <>
      <table className="grid">
        <thead>
          <tr>
            <th>{t('Pipeline')}</th>
            <th>{t('Concurrency')}</th>
            <th>{t('Created')}</th>
          </tr>
        </thead>
        <tbody>
          {pipelines.map((p) => (
            <tr key={p.name}>
              <td>{p.name}</td>
              <td>{p.concurrency === 0 ? `0 (${t('paused')})` : p.concurrency}</td>
              <td>{date(p.createdMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {root && (
        <Form
          onSubmit={async () => {
            await put(`/api/pipelines/${encodeURIComponent(name)}`, { concurrency: Number(concurrency) });
            reload();
          }}
        >
          <h3>{t('Create a pipeline or change its concurrency')}</h3>
          <div className="row">
            <input placeholder={t('name')} value={name} onChange={(e) => setName(e.target.value)} required />
            <input type="number" min={0} max={64} value={concurrency} onChange={(e) => setConcurrency(e.target.value)} />
            <button type="submit">{t('Save')}</button>
          </div>
        </Form>
      )}
    </>
  );
}

function Workflows() {
  const { t } = useI18n();
  const { data, reload } = useLoad(() => get<Template[]>('/api/workflows'), []);
  const [v, setV] = useState({ name: '', fops: '', pipeline: '', notifyUrl: '' });
  const set = (name: string) => (e: { target: { value: string } }) => setV((x) => ({ ...x, [name]: e.target.value }));
  return (
    <>
      <table className="grid">
        <thead>
          <tr>
            <th>{t('Name')}</th>
            <th>fops</th>
            <th>{t('Pipeline')}</th>
            <th>notifyURL</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.map((w) => (
            <tr key={w.name}>
              <td>{w.name}</td>
              <td className="mono small">{w.fops}</td>
              <td>{w.pipeline}</td>
              <td className="small">{w.notifyUrl}</td>
              <td>
                <button className="danger" onClick={() => void del(`/api/workflows/${encodeURIComponent(w.name)}`).then(reload)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Form
        onSubmit={async () => {
          await put(`/api/workflows/${encodeURIComponent(v.name)}`, v);
          reload();
        }}
      >
        <h3>{t('Create or change a workflow template')}</h3>
        <div className="row">
          <input placeholder={t('name')} value={v.name} onChange={set('name')} required />
          <input placeholder={t('Pipeline')} value={v.pipeline} onChange={set('pipeline')} />
          <input placeholder="notifyURL" value={v.notifyUrl} onChange={set('notifyUrl')} />
        </div>
        <label>
          fops
          <input value={v.fops} onChange={set('fops')} required />
        </label>
        <button type="submit">{t('Save')}</button>
      </Form>
    </>
  );
}

function FetchTasks({ buckets }: { buckets: BucketRow[] }) {
  const { t, date } = useI18n();
  const { data, reload } = useLoad(() => get<{ tasks: FetchTask[] }>('/api/fetch-tasks'), []);
  const [v, setV] = useState({ url: '', bucket: '', key: '' });
  const set = (name: string) => (e: { target: { value: string } }) => setV((x) => ({ ...x, [name]: e.target.value }));
  return (
    <>
      <Form
        onSubmit={async () => {
          const body: Record<string, string> = { url: v.url, bucket: v.bucket || buckets[0]?.name || '' };
          if (v.key) body.key = v.key;
          const r = await post<{ id: string }>('/api/fetch-tasks', body);
          reload();
          return `id ${r.id}`;
        }}
      >
        <h3>{t('Fetch a URL into a bucket (async)')}</h3>
        <div className="row">
          <input placeholder="https://example.com/file.jpg" value={v.url} onChange={set('url')} required style={{ flex: 1 }} />
          <select value={v.bucket} onChange={set('bucket')}>
            {buckets.map((b) => (
              <option key={b.name}>{b.name}</option>
            ))}
          </select>
          <input placeholder={t('Key (optional)')} value={v.key} onChange={set('key')} />
          <button type="submit">{t('Submit')}</button>
        </div>
      </Form>
      <div className="row">
        <button onClick={reload}>{t('Refresh')}</button>
      </div>
      <table className="grid">
        <thead>
          <tr>
            <th>id</th>
            <th>URL</th>
            <th>{t('Target')}</th>
            <th>{t('State')}</th>
            <th>{t('Result')}</th>
            <th>{t('Created')}</th>
          </tr>
        </thead>
        <tbody>
          {data?.tasks.map((task) => (
            <tr key={task.id}>
              <td className="mono small">{task.id}</td>
              <td className="small">{task.request?.url}</td>
              <td>
                {task.request?.bucket}:{task.result?.key ?? task.request?.key ?? ''}
              </td>
              <td>
                {t(task.state)} ({task.attempts})
              </td>
              <td className={task.result?.error ? 'error small' : 'small'}>{task.result?.error ? `${task.result.code ?? ''} ${task.result.error}` : (task.result?.fsize ?? '')}</td>
              <td>{date(task.createdMs)}</td>
            </tr>
          ))}
          {data?.tasks.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                {t('No fetch tasks.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </>
  );
}

export function Processing({ session }: { session: Session }) {
  const { t } = useI18n();
  const [tab, setTab] = useState('jobs');
  const pipelines = useLoad(() => get<Pipeline[]>('/api/pipelines'), []);
  const buckets = useLoad(() => get<BucketRow[]>('/api/buckets'), []);
  const p = pipelines.data ?? [];
  const b = buckets.data ?? [];
  return (
    <section>
      <h2>{t('Processing')}</h2>
      <Tabs
        tabs={[
          ['jobs', t('Jobs')],
          ['submit', t('Submit a pfop')],
          ['pipelines', t('Pipelines')],
          ['workflows', t('Workflow templates')],
          ['fetch', t('Fetch tasks')],
        ]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'jobs' && <Jobs pipelines={p} />}
      {tab === 'submit' && <SubmitPfop buckets={b} pipelines={p} />}
      {tab === 'pipelines' && <Pipelines pipelines={p} root={session.root} reload={pipelines.reload} />}
      {tab === 'workflows' && <Workflows />}
      {tab === 'fetch' && <FetchTasks buckets={b} />}
    </section>
  );
}
