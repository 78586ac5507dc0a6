// The IAM audit log: every change of the account's sub-users, key pairs, groups and policies (who, what, on what,
// when, from where, the request id), oldest first, a page at a time; filtered by action or resource.
import { useEffect, useState } from 'react';
import { get, iamPath } from '../api';
import { useI18n } from '../i18n';
import type { IamScope } from './Iam';

interface Audit {
  id: string;
  action: string;
  resource: string;
  access_key: string;
  source_ip: string;
  request_id: string;
  event_time: string;
}

export function IamAudits({ scope }: { scope: IamScope }) {
  const { t, date } = useI18n();
  const [filter, setFilter] = useState({ action: '', resource: '' });
  const [rows, setRows] = useState<Audit[]>([]);
  const [marker, setMarker] = useState('');
  const [error, setError] = useState('');

  const load = async (from: string, keep: Audit[]): Promise<void> => {
    try {
      const params: Record<string, string> = { limit: '50', ...(from ? { marker: from } : {}) };
      if (filter.action) params.action = filter.action;
      if (filter.resource) params.resource = filter.resource;
      const page = await get<{ marker: string; list: Audit[] }>(iamPath('/audits', scope.account, params));
      setRows([...keep, ...page.list]);
      setMarker(page.marker);
      setError('');
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => {
    void load('', []);
  }, [scope.account, filter]);

  return (
    <div>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setFilter({ action: String(f.get('auditAction') ?? '').trim(), resource: String(f.get('auditResource') ?? '').trim() });
        }}
      >
        <input name="auditAction" placeholder={t('Action, e.g. CreateUser')} />
        <input name="auditResource" placeholder={t('Resource, e.g. user/alice')} />
        <button type="submit">{t('Filter')}</button>
      </form>
      {error && <p className="error">{error}</p>}
      <table className="grid" data-testid="iam-audits">
        <thead>
          <tr>
            <th>{t('Time')}</th>
            <th>{t('Action')}</th>
            <th>{t('Resource')}</th>
            <th>{t('By')}</th>
            <th>{t('From')}</th>
            <th>{t('Request id')}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((a) => (
            <tr key={a.id}>
              <td>{date(a.event_time)}</td>
              <td>{a.action}</td>
              <td className="mono">{a.resource}</td>
              <td className="mono" title={a.access_key}>
                {a.access_key.slice(0, 8)}…
              </td>
              <td>{a.source_ip}</td>
              <td className="mono">{a.request_id}</td>
            </tr>
          ))}
          {rows.length === 0 && !error && (
            <tr>
              <td colSpan={6} className="muted">
                {t('No changes recorded.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {marker && (
        <div className="row pager">
          <button onClick={() => void load(marker, rows)}>{t('More')}</button>
        </div>
      )}
    </div>
  );
}
