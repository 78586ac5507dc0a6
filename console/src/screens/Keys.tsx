import { useState } from 'react';
import { del, get, post } from '../api';
import { CopyButton } from '../CopyButton';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';

interface KeyList {
  root: { accessKey: string };
  accounts: Array<{ accessKey: string; ctime: number; buckets: string[] }>;
}

export function Keys() {
  const { t, date } = useI18n();
  const { data, error, reload } = useLoad(() => get<KeyList>('/api/keys'), []);
  const [created, setCreated] = useState<{ accessKey: string; secretKey: string }>();
  const [message, setMessage] = useState('');

  const create = async (): Promise<void> => {
    try {
      setCreated(await post('/api/keys'));
      reload();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const remove = async (ak: string): Promise<void> => {
    if (!window.confirm(t('Delete the key pair {ak}? Its buckets stay, reachable with the root key.', { ak }))) return;
    try {
      await del(`/api/keys/${encodeURIComponent(ak)}`);
      reload();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };

  return (
    <section>
      <h2>{t('Keys')}</h2>
      {(error || message) && <p className="error">{error || message}</p>}
      <p>
        {t('Root AccessKey')}: <code>{data?.root.accessKey}</code>
      </p>
      <button className="primary" onClick={() => void create()}>
        {t('Create account key pair')}
      </button>
      {created && (
        <div className="card note">
          <p>{t('Copy the SecretKey now: it is not shown again.')}</p>
          <p>
            AccessKey: <code data-testid="new-ak">{created.accessKey}</code> <CopyButton text={created.accessKey} label={t('Copy AccessKey')} />
          </p>
          <p>
            SecretKey: <code data-testid="new-sk">{created.secretKey}</code> <CopyButton text={created.secretKey} label={t('Copy SecretKey')} />
          </p>
        </div>
      )}
      <table className="grid">
        <thead>
          <tr>
            <th>AccessKey</th>
            <th>{t('Created')}</th>
            <th>{t('Owned buckets')}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.accounts.map((k) => (
            <tr key={k.accessKey}>
              <td className="mono">{k.accessKey}</td>
              <td>{date(k.ctime * 1000)}</td>
              <td>{k.buckets.join(', ')}</td>
              <td>
                <button className="danger" onClick={() => void remove(k.accessKey)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
          {data?.accounts.length === 0 && (
            <tr>
              <td colSpan={4} className="muted">
                {t('No account key pairs yet.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
