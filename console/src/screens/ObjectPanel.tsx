// One object: preview (image, video with a vframe poster, text, JSON), its attributes, and every management
// action: rename/move, copy, MIME type, metadata, storage class, disable/enable, deleteAfterDays, a private link
// with an expiry, a fop URL builder with a live preview, delete; in a versioned bucket its versions (download,
// restore = copy onto the key as the current version, delete for good).
import { CloseIcon } from '../icons';
import { useEffect, useState, type ReactNode } from 'react';
import { bucketPath, formatBytes, get, post } from '../api';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

export interface ObjectItem {
  key: string;
  fsize: number;
  hash: string;
  mimeType: string;
  putTime: number;
  type: number;
  status?: number;
  md5?: string;
  expiration?: number;
  'x-qn-meta'?: Record<string, string>;
  url: string;
  thumb?: string;
  thumbFallback?: string;
  /** A viewable rendering: a JPEG of an image browsers cannot show (HEIC…), a video's poster frame. */
  preview?: string;
  /** The video's first frame, for a video too short for `preview`'s. */
  posterFallback?: string;
}

/** The fop builder's first pipeline for an object of `mime` ('' = none proposed). */
export function defaultFop(mime: string): string {
  if (mime.startsWith('video/')) return 'vframe/jpg/offset/3/w/400';
  if (mime.startsWith('audio/')) return 'avinfo';
  if (/^image\/(jpeg|png|gif|webp|avif|bmp)$/.test(mime)) return 'imageView2/2/w/400/h/300';
  if (mime.startsWith('image/')) return 'imageView2/2/w/400/h/300/format/jpg';
  return '';
}

/** Loads `first` and, if it fails (e.g. a frame past the end of a short video), `fallback`. */
function useFirstThatLoads(first: string | undefined, fallback: string | undefined): string | undefined {
  const [src, setSrc] = useState<string>();
  useEffect(() => {
    if (!first) return setSrc(undefined);
    let live = true;
    const probe = new Image();
    probe.onload = () => live && setSrc(first);
    probe.onerror = () => live && setSrc(fallback);
    probe.src = first;
    return () => {
      live = false;
    };
  }, [first, fallback]);
  return src;
}

const PREVIEW_BYTES = 64 * 1024;
const CLASSES = ['Standard', 'Infrequent access', 'Archive', 'Deep archive', 'Archive direct'];
const EXPIRIES: Array<[number, string]> = [
  [600, '10 minutes'],
  [3600, '1 hour'],
  [86400, '1 day'],
  [7 * 86400, '7 days'],
  [30 * 86400, '30 days'],
];

function isText(mime: string): boolean {
  return mime.startsWith('text/') || /json|xml|javascript|yaml|csv/.test(mime);
}

function TextPreview({ url, json }: { url: string; json: boolean }) {
  const { t } = useI18n();
  const [text, setText] = useState<string>();
  useEffect(() => {
    let live = true;
    fetch(url, { headers: { range: `bytes=0-${PREVIEW_BYTES - 1}` } })
      .then((r) => r.text())
      .then((body) => {
        if (!live) return;
        if (json) {
          try {
            setText(JSON.stringify(JSON.parse(body), null, 2));
            return;
          } catch {
            // partial or invalid JSON: shown as it is
          }
        }
        setText(body);
      })
      .catch((err: unknown) => live && setText(`${t('Preview failed')}: ${String(err)}`));
    return () => {
      live = false;
    };
  }, [url, json, t]);
  return <pre className="text-preview">{text ?? '…'}</pre>;
}

function VideoPreview({ item }: { item: ObjectItem }) {
  const poster = useFirstThatLoads(item.preview, item.posterFallback);
  return <video className="preview" src={item.url} poster={poster} controls preload="none" data-testid="preview-video" />;
}

function Preview({ item }: { item: ObjectItem }) {
  const { t } = useI18n();
  const mime = item.mimeType;
  // HEIC and other types browsers cannot decode come as a JPEG rendering (`preview`).
  if (mime.startsWith('image/')) return <img className="preview" src={item.preview ?? item.url} alt={item.key} data-testid="preview-image" />;
  if (mime.startsWith('video/')) return <VideoPreview item={item} />;
  if (mime.startsWith('audio/')) return <audio src={item.url} controls preload="none" />;
  if (isText(mime)) return <TextPreview url={item.url} json={mime.includes('json') || item.key.endsWith('.json')} />;
  return <p className="muted">{t('No preview for this type.')}</p>;
}

interface VersionItem {
  versionId: string;
  size: number;
  putTime: number;
  current: boolean;
  deleteMarker: boolean;
}

/** The key's versions, newest first, each with download, restore and delete (docs/reference/versioning.md). */
function Versions({ bucket, objectKey, onChanged }: { bucket: string; objectKey: string; onChanged: () => void }) {
  const { t, date } = useI18n();
  const list = useLoad(() => get<{ versioning: string | null; versions: VersionItem[]; more: boolean }>(bucketPath(bucket, `/versions?key=${encodeURIComponent(objectKey)}`)), [bucket, objectKey]);
  const [message, setMessage] = useState('');
  if (!list.data?.versioning) return null;
  const act = async (what: 'restore' | 'delete', v: VersionItem): Promise<void> => {
    setMessage('');
    try {
      await post(bucketPath(bucket, `/versions/${what}`), { key: objectKey, versionId: v.versionId });
      setMessage(what === 'restore' ? t('Restored.') : t('Deleted.'));
      list.reload();
      onChanged();
    } catch (err) {
      setMessage(`${t('Failed')}: ${(err as Error).message}`);
    }
  };
  const download = (v: VersionItem): string =>
    bucketPath(bucket, `/versions/download?key=${encodeURIComponent(objectKey)}&versionId=${encodeURIComponent(v.versionId)}`);
  return (
    <div className="versions" data-testid="versions">
      <h4>{t('Versions')}</h4>
      <table>
        <tbody>
          {list.data.versions.map((v) => (
            <tr key={v.versionId} data-version={v.versionId}>
              <td className="mono small">{v.versionId}</td>
              <td>{v.deleteMarker ? t('delete marker') : formatBytes(v.size)}</td>
              <td>{date(v.putTime / 10_000)}</td>
              <td>{v.current ? t('current') : ''}</td>
              <td className="row">
                {!v.deleteMarker && (
                  <a href={download(v)} download>
                    {t('Download')}
                  </a>
                )}
                {!v.deleteMarker && !v.current && <button onClick={() => void act('restore', v)}>{t('Restore')}</button>}
                <button
                  className="danger"
                  onClick={() => {
                    if (window.confirm(t('Delete this version for good?'))) void act('delete', v);
                  }}
                >
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data.more && <p className="muted">{t('Only the newest 1000 versions are shown.')}</p>}
      {message && (
        <p className="note" role="status">
          {message}
        </p>
      )}
    </div>
  );
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="field">
      <span className="label">{label}</span>
      {children}
    </div>
  );
}

export function ObjectPanel({ bucket, objectKey, onClose, onChanged }: { bucket: string; objectKey: string; onClose: () => void; onChanged: (key?: string) => void }) {
  const { t, date } = useI18n();
  const stat = useLoad(() => get<ObjectItem>(bucketPath(bucket, `/stat?key=${encodeURIComponent(objectKey)}`)), [bucket, objectKey]);
  const [message, setMessage] = useState('');
  const [newKey, setNewKey] = useState(objectKey);
  const [copyKey, setCopyKey] = useState(`${objectKey}.copy`);
  const [mime, setMime] = useState('');
  const [metaName, setMetaName] = useState('');
  const [metaValue, setMetaValue] = useState('');
  const [days, setDays] = useState('0');
  const [expires, setExpires] = useState(3600);
  const [link, setLink] = useState('');
  const [fop, setFop] = useState('');
  const [fopEdited, setFopEdited] = useState(false);
  const [fopUrl, setFopUrl] = useState('');
  const item = stat.data;

  useEffect(() => {
    setNewKey(objectKey);
    setCopyKey(`${objectKey}.copy`);
    setLink('');
  }, [objectKey]);
  useEffect(() => {
    if (item) setMime(item.mimeType);
    // The builder starts with a pipeline that suits the type (vframe for a video, not imageView2), until edited.
    if (item && !fopEdited) setFop(defaultFop(item.mimeType));
  }, [item, fopEdited]);

  // The fop builder's live preview: a signed URL for the pipeline, refreshed as it is typed.
  useEffect(() => {
    if (!fop.trim()) return setFopUrl('');
    const timer = setTimeout(() => {
      post<{ url: string }>(bucketPath(bucket, '/link'), { key: objectKey, expires: 3600, fop: fop.trim() })
        .then((r) => setFopUrl(r.url))
        .catch((err: unknown) => setFopUrl(`error: ${(err as Error).message}`));
    }, 400);
    return () => clearTimeout(timer);
  }, [fop, bucket, objectKey]);

  const op = async (name: string, body: Record<string, unknown>, nextKey?: string, done?: string): Promise<void> => {
    setMessage('');
    try {
      await post(bucketPath(bucket, `/ops/${name}`), { key: objectKey, ...body });
      setMessage(done ?? t('Saved.'));
      if (name === 'delete') {
        onChanged(undefined);
        onClose();
        return;
      }
      onChanged(nextKey ?? objectKey);
      stat.reload();
    } catch (err) {
      setMessage(`${t('Failed')}: ${(err as Error).message}`);
    }
  };

  const makeLink = async (): Promise<void> => {
    try {
      const r = await post<{ url: string }>(bucketPath(bucket, '/link'), { key: objectKey, expires });
      setLink(r.url);
    } catch (err) {
      setMessage(`${t('Failed')}: ${(err as Error).message}`);
    }
  };

  return (
    <div className="overlay" onClick={onClose}>
      <aside className="panel" onClick={(e) => e.stopPropagation()} role="dialog" aria-label={objectKey}>
        <div className="row between">
          <h3 className="key-title">{objectKey}</h3>
          <button onClick={onClose} aria-label={t('Close')}>
            <CloseIcon />
          </button>
        </div>
        {stat.error && <p className="error">{stat.error}</p>}
        {item && (
          <>
            <div className="preview-box">
              <Preview item={item} />
            </div>
            <dl className="facts">
              <dt>{t('Size')}</dt>
              <dd>{formatBytes(item.fsize)}</dd>
              <dt>{t('Type')}</dt>
              <dd>{item.mimeType}</dd>
              <dt>{t('Uploaded')}</dt>
              <dd>{date(item.putTime / 10_000)}</dd>
              <dt>{t('hash')}</dt>
              <dd className="mono">{item.hash}</dd>
              <dt>{t('Storage class')}</dt>
              <dd>{t(CLASSES[item.type] ?? String(item.type))}</dd>
              <dt>{t('Status')}</dt>
              <dd>{item.status === 1 ? t('disabled') : t('enabled')}</dd>
              {item.expiration !== undefined && (
                <>
                  <dt>{t('Expires')}</dt>
                  <dd>{date(item.expiration * 1000)}</dd>
                </>
              )}
              {Object.entries(item['x-qn-meta'] ?? {}).map(([k, v]) => (
                <span key={k} className="contents">
                  <dt>x-qn-meta-{k}</dt>
                  <dd>{v}</dd>
                </span>
              ))}
            </dl>
            {message && (
              <p className="note" role="status">
                {message}
              </p>
            )}
            <Field label={t('Rename / move')}>
              <input name="newKey" value={newKey} onChange={(e) => setNewKey(e.target.value)} />
              <button data-testid="rename" onClick={() => void op('move', { toKey: newKey }, newKey, t('Renamed.'))} disabled={!newKey || newKey === objectKey}>
                {t('Rename')}
              </button>
            </Field>
            <Field label={t('Copy to')}>
              <input value={copyKey} onChange={(e) => setCopyKey(e.target.value)} />
              <button onClick={() => void op('copy', { toKey: copyKey }, objectKey, t('Copied.'))} disabled={!copyKey}>
                {t('Copy')}
              </button>
            </Field>
            <Field label={t('MIME type')}>
              <input value={mime} onChange={(e) => setMime(e.target.value)} />
              <button onClick={() => void op('chgm', { mimeType: mime })}>{t('Save')}</button>
            </Field>
            <Field label={t('Metadata')}>
              <input placeholder={t('name')} value={metaName} onChange={(e) => setMetaName(e.target.value)} />
              <input placeholder={t('value (empty removes it)')} value={metaValue} onChange={(e) => setMetaValue(e.target.value)} />
              <button onClick={() => void op('chgm', { meta: { [metaName]: metaValue } })} disabled={!metaName}>
                {t('Save')}
              </button>
            </Field>
            <Field label={t('Storage class')}>
              <select value={item.type} onChange={(e) => void op('chtype', { type: Number(e.target.value) })}>
                {CLASSES.map((c, i) => (
                  <option key={c} value={i}>
                    {t(c)}
                  </option>
                ))}
              </select>
            </Field>
            <Field label={t('Status')}>
              <button onClick={() => void op('chstatus', { status: item.status === 1 ? 0 : 1 })}>{item.status === 1 ? t('Enable') : t('Disable')}</button>
            </Field>
            <Field label={t('Delete after days')}>
              <input type="number" min={0} value={days} onChange={(e) => setDays(e.target.value)} />
              <button onClick={() => void op('deleteAfterDays', { days: Number(days) })}>{t('Save')}</button>
            </Field>
            <Field label={t('Private link')}>
              <select value={expires} onChange={(e) => setExpires(Number(e.target.value))}>
                {EXPIRIES.map(([s, label]) => (
                  <option key={s} value={s}>
                    {t(label)}
                  </option>
                ))}
              </select>
              <button data-testid="make-link" onClick={() => void makeLink()}>{t('Make link')}</button>
            </Field>
            {link && (
              <p className="linkbox">
                <a href={link} target="_blank" rel="noreferrer" data-testid="private-link">
                  {link}
                </a>
              </p>
            )}
            <Field label={t('Fop URL builder')}>
              <input className="wide" data-testid="fop-input" value={fop} onChange={(e) => (setFop(e.target.value), setFopEdited(true))} placeholder="imageView2/2/w/200|imageMogr2/rotate/90" />
            </Field>
            {fopUrl && (
              <div className="fop-preview">
                <a href={fopUrl} target="_blank" rel="noreferrer" className="mono small">
                  {fopUrl}
                </a>
                {!fopUrl.startsWith('error') && /^(imageView2|imageMogr2|watermark|vframe)/.test(fop.trim()) && <img src={fopUrl} alt={t('Fop preview')} data-testid="fop-image" />}
              </div>
            )}
            <div className="row">
              <button
                className="danger"
                data-testid="delete-object"
                onClick={() => {
                  if (window.confirm(t('Delete {key}?', { key: objectKey }))) void op('delete', {});
                }}
              >
                {t('Delete')}
              </button>
            </div>
          </>
        )}
        <Versions bucket={bucket} objectKey={objectKey} onChanged={() => (onChanged(objectKey), stat.reload())} />
      </aside>
    </div>
  );
}
