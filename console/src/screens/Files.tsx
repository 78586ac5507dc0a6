// The Files screen: a prefix/delimiter browser with marker paging (100 entries a page, so buckets of millions of
// keys stay fast), thumbnails, drag-and-drop and file-input uploads with per-file progress, and the object panel.
import { FileIcon, FolderIcon } from '../icons';
import { useEffect, useRef, useState, type DragEvent } from 'react';
import { bucketPath, formatBytes, get } from '../api';
import { go } from '../App';
import { useI18n } from '../i18n';
import { uploadFile, type UploadProgress } from '../upload';
import { useLoad } from '../useLoad';
import type { BucketRow } from './Buckets';
import { ObjectPanel, type ObjectItem } from './ObjectPanel';

interface Page {
  items: ObjectItem[];
  commonPrefixes: string[];
  marker: string;
}

export function Files({ bucket, prefix }: { bucket: string; prefix: string }) {
  const { t, date } = useI18n();
  const buckets = useLoad(() => get<BucketRow[]>('/api/buckets'), []);
  const [flat, setFlat] = useState(false);
  const [markers, setMarkers] = useState<string[]>(['']);
  const [filter, setFilter] = useState(prefix);
  const [uploads, setUploads] = useState<UploadProgress[]>([]);
  const [open, setOpen] = useState<string>();
  const [dragging, setDragging] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    setMarkers(['']);
    setFilter(prefix);
    setOpen(undefined);
  }, [bucket, prefix, flat]);

  const marker = markers[markers.length - 1] ?? '';
  const page = useLoad(async (): Promise<Page | undefined> => {
    if (!bucket) return undefined;
    const q = new URLSearchParams({ prefix, marker, limit: '100', delimiter: flat ? '' : '/' });
    return get<Page>(bucketPath(bucket, `/objects?${q.toString()}`));
  }, [bucket, prefix, marker, flat]);

  useEffect(() => {
    if (!bucket && buckets.data && buckets.data.length > 0) go('files', buckets.data[0]!.name);
  }, [bucket, buckets.data]);

  const upload = (files: FileList | File[]): void => {
    const list = Array.from(files);
    const start = uploads.length;
    setUploads((u) => [...u, ...list.map((f) => ({ name: f.name, key: prefix + f.name, percent: 0, state: 'uploading' as const }))]);
    const update = (i: number, change: Partial<UploadProgress>): void => setUploads((u) => u.map((x, j) => (j === i ? { ...x, ...change } : x)));
    list.forEach((file, n) => {
      const i = start + n;
      uploadFile(bucket, prefix + file.name, file, (percent) => update(i, { percent }))
        .then(() => {
          update(i, { state: 'done', percent: 100 });
          page.reload();
        })
        .catch((err: unknown) => update(i, { state: 'failed', error: (err as { message?: string }).message ?? String(err) }));
    });
  };

  const onDrop = (e: DragEvent): void => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer.files.length > 0) upload(e.dataTransfer.files);
  };

  const crumbs = prefix.split('/').filter((p, i, all) => p !== '' || i < all.length - 1);
  const data = page.data;

  return (
    <section
      className={dragging ? 'files dragging' : 'files'}
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      <div className="row between">
        <h2>{t('Files')}</h2>
        <select aria-label={t('Bucket')} value={bucket} onChange={(e) => go('files', e.target.value)}>
          {!bucket && <option value="">{t('Choose a bucket')}</option>}
          {buckets.data?.map((b) => (
            <option key={b.name} value={b.name}>
              {b.name}
            </option>
          ))}
        </select>
      </div>
      {bucket && (
        <>
          <div className="row">
            <nav className="crumbs">
              <a href={`#/files/${encodeURIComponent(bucket)}`}>{bucket}</a>
              {crumbs.map((c, i) => {
                const p = crumbs.slice(0, i + 1).join('/') + '/';
                return (
                  <span key={p}>
                    {' / '}
                    <a href={`#/files/${encodeURIComponent(bucket)}?prefix=${encodeURIComponent(p)}`}>{c}</a>
                  </span>
                );
              })}
            </nav>
            <span className="spacer" />
            <form
              className="row"
              onSubmit={(e) => {
                e.preventDefault();
                go('files', bucket, filter ? { prefix: filter } : {});
              }}
            >
              <input placeholder={t('Key prefix')} value={filter} onChange={(e) => setFilter(e.target.value)} />
              <button type="submit">{t('Filter')}</button>
            </form>
            <label className="inline">
              <input type="checkbox" checked={flat} onChange={(e) => setFlat(e.target.checked)} /> {t('Flat list (no folders)')}
            </label>
          </div>
          <div className="dropzone" onClick={() => input.current?.click()}>
            {t('Drop files here, or click to choose files. Uploads go to')} <code>{prefix || '/'}</code>
            <input
              ref={input}
              type="file"
              multiple
              hidden
              data-testid="upload-input"
              onChange={(e) => {
                if (e.target.files) upload(e.target.files);
                e.target.value = '';
              }}
            />
          </div>
          {uploads.length > 0 && (
            <ul className="uploads">
              {uploads.map((u, i) => (
                <li key={i} className={u.state} data-upload={u.key}>
                  <span className="name">{u.key}</span>
                  <progress max={100} value={u.percent} />
                  <span className="state">{u.state === 'failed' ? `${t('failed')}: ${u.error ?? ''}` : u.state === 'done' ? t('done') : `${Math.floor(u.percent)}%`}</span>
                </li>
              ))}
            </ul>
          )}
          {page.error && (
            <p className="error" role="alert">
              {page.error}
            </p>
          )}
          <table className="grid files-table">
            <thead>
              <tr>
                <th />
                <th>{t('Key')}</th>
                <th>{t('Size')}</th>
                <th>{t('Type')}</th>
                <th>{t('Uploaded')}</th>
              </tr>
            </thead>
            <tbody>
              {data?.commonPrefixes.map((p) => (
                <tr key={`dir:${p}`} className="dir">
                  <td className="thumb">
                    <FolderIcon />
                  </td>
                  <td colSpan={4}>
                    <a href={`#/files/${encodeURIComponent(bucket)}?prefix=${encodeURIComponent(p)}`}>{p.slice(prefix.length)}</a>
                  </td>
                </tr>
              ))}
              {data?.items.map((item) => (
                <tr key={item.key} data-key={item.key} className={item.status === 1 ? 'disabled' : ''}>
                  <td className="thumb">
                    {item.thumb ? (
                      <img
                        src={item.thumb}
                        alt=""
                        loading="lazy"
                        onError={(e) => {
                          // A video shorter than the thumbnail's frame time: its first frame instead.
                          const img = e.currentTarget;
                          if (item.thumbFallback && img.src !== item.thumbFallback) img.src = item.thumbFallback;
                          else img.style.visibility = 'hidden';
                        }}
                      />
                    ) : (
                      <FileIcon />
                    )}
                  </td>
                  <td>
                    <button className="link key" onClick={() => setOpen(item.key)}>
                      {flat ? item.key : item.key.slice(prefix.length)}
                    </button>
                    {item.status === 1 && <span className="tag">{t('disabled')}</span>}
                  </td>
                  <td className="num">{formatBytes(item.fsize)}</td>
                  <td>{item.mimeType}</td>
                  <td>{date(item.putTime / 10_000)}</td>
                </tr>
              ))}
              {data && data.items.length === 0 && data.commonPrefixes.length === 0 && (
                <tr>
                  <td colSpan={5} className="muted">
                    {t('Nothing here yet.')}
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <div className="row pager">
            <button disabled={markers.length <= 1} onClick={() => setMarkers(['']) }>
              {t('First page')}
            </button>
            <button disabled={markers.length <= 1} onClick={() => setMarkers((m) => m.slice(0, -1))}>
              {t('Previous page')}
            </button>
            <span className="muted">{t('Page {n}', { n: markers.length })}</span>
            <button disabled={!data?.marker} onClick={() => data && setMarkers((m) => [...m, data.marker])}>
              {t('Next page')}
            </button>
          </div>
          {open !== undefined && (
            <ObjectPanel
              bucket={bucket}
              objectKey={open}
              onClose={() => setOpen(undefined)}
              onChanged={(key) => {
                page.reload();
                setOpen(key);
              }}
            />
          )}
        </>
      )}
    </section>
  );
}
