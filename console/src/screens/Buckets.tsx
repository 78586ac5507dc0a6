import { useState, type FormEvent } from 'react';
import { del, formatBytes, get, post, bucketPath } from '../api';
import { go } from '../App';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

export interface BucketRow {
  name: string;
  region: string;
  private: boolean;
  ctime: number;
  owner: string;
  objects: number;
  bytes: number;
}

export function Buckets() {
  const { t, date } = useI18n();
  const { data, error, reload } = useLoad(() => get<BucketRow[]>('/api/buckets'), []);
  const [name, setName] = useState('');
  const [message, setMessage] = useState('');

  const create = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setMessage('');
    try {
      await post('/api/buckets', { name: name.trim() });
      setName('');
      reload();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };

  const remove = async (bucket: string): Promise<void> => {
    if (!window.confirm(t('Delete bucket {name}? Only an empty bucket can be deleted.', { name: bucket }))) return;
    try {
      await del(bucketPath(bucket));
      reload();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };

  return (
    <section>
      <h2>{t('Buckets')}</h2>
      <form className="row" onSubmit={(e) => void create(e)}>
        <input name="bucketName" placeholder={t('New bucket name')} value={name} onChange={(e) => setName(e.target.value)} required />
        <button type="submit" className="primary">
          {t('Create bucket')}
        </button>
      </form>
      {(message || error) && (
        <p className="error" role="alert">
          {message || error}
        </p>
      )}
      <table className="grid">
        <thead>
          <tr>
            <th>{t('Name')}</th>
            <th>{t('Objects')}</th>
            <th>{t('Size')}</th>
            <th>{t('Access')}</th>
            <th>{t('Region')}</th>
            <th>{t('Created')}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.map((b) => (
            <tr key={b.name} data-bucket={b.name}>
              <td>
                <a href={`#/files/${encodeURIComponent(b.name)}`}>{b.name}</a>
              </td>
              <td className="num">{b.objects.toLocaleString()}</td>
              <td className="num">{formatBytes(b.bytes)}</td>
              <td>{b.private ? t('private') : t('public')}</td>
              <td>{b.region}</td>
              <td>{date(b.ctime * 1000, 'date')}</td>
              <td className="actions">
                <button onClick={() => go('files', b.name)}>{t('Files')}</button>
                <button onClick={() => go('buckets', b.name)}>{t('Settings')}</button>
                <button className="danger" onClick={() => void remove(b.name)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
          {data?.length === 0 && (
            <tr>
              <td colSpan={7} className="muted">
                {t('No buckets yet.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
