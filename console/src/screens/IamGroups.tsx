// IAM groups: the list (create, delete) and one group (description, members, attached policies).
import { useState, type FormEvent } from 'react';
import { del, get, iamPath, patch, post, put } from '../api';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';
import type { IamGroupRow, IamPolicyRow, IamScope, IamUserRow, Paged } from './Iam';
import { AttachCard, PAGE_SIZE, Pager, Status, useAction } from './IamUsers';

export function IamGroups({ scope }: { scope: IamScope }) {
  const { t, date } = useI18n();
  const [page, setPage] = useState(1);
  const { data, error, reload } = useLoad(
    () => get<Paged<IamGroupRow>>(iamPath('/groups', scope.account, { page: String(page), page_size: String(PAGE_SIZE) })),
    [scope.account, page],
  );
  const [alias, setAlias] = useState('');
  const [description, setDescription] = useState('');
  const { status, run } = useAction();

  const create = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (await run(() => post(iamPath('/groups', scope.account), { alias: alias.trim(), description }), t('Created.'))) {
      setAlias('');
      setDescription('');
      reload();
    }
  };
  const remove = (g: IamGroupRow): void => {
    if (!window.confirm(t('Delete group {alias}? Its members stay; they lose its policies.', { alias: g.alias }))) return;
    void run(() => del(iamPath(`/groups/${encodeURIComponent(g.alias)}`, scope.account))).then(reload);
  };

  return (
    <div>
      <form className="row" onSubmit={(e) => void create(e)}>
        <input name="groupAlias" placeholder={t('Group name')} value={alias} onChange={(e) => setAlias(e.target.value)} required autoComplete="off" />
        <input name="groupDescription" placeholder={t('Description')} value={description} onChange={(e) => setDescription(e.target.value)} />
        <button type="submit" className="primary">
          {t('Create group')}
        </button>
      </form>
      <Status {...status} />
      {error && <p className="error">{error}</p>}
      <table className="grid" data-testid="iam-groups">
        <thead>
          <tr>
            <th>{t('Name')}</th>
            <th>{t('Description')}</th>
            <th>{t('Created')}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.list.map((g) => (
            <tr key={g.alias}>
              <td>
                <button className="link key" onClick={() => scope.open('groups', g.alias)}>
                  {g.alias}
                </button>
              </td>
              <td>{g.description}</td>
              <td>{date(g.created_at)}</td>
              <td className="actions">
                <button className="danger" onClick={() => remove(g)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
          {data?.list.length === 0 && (
            <tr>
              <td colSpan={4} className="muted">
                {t('No groups yet.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {data && <Pager page={page} count={data.count} onPage={setPage} />}
    </div>
  );
}

interface GroupDetail {
  group: IamGroupRow;
  users: IamUserRow[];
  policies: IamPolicyRow[];
}

export function IamGroup({ scope, alias }: { scope: IamScope; alias: string }) {
  const { t } = useI18n();
  const base = `/groups/${encodeURIComponent(alias)}`;
  const { data, error, reload } = useLoad(() => get<GroupDetail>(iamPath(base, scope.account)), [scope.account, alias]);
  /** Saves the aliases attached under `what` (`users`, `groups`, `policies`), then reloads the screen. */
  const attach = (what: 'users' | 'groups' | 'policies') => (aliases: string[]) =>
    run(() => put(iamPath(`${base}/${what}`, scope.account), { [what]: aliases }), t('Saved.')).then(reload);
  const users = useLoad(() => get<Paged<IamUserRow>>(iamPath('/users', scope.account, { page_size: '1000' })), [scope.account]);
  const policies = useLoad(() => get<Paged<IamPolicyRow>>(iamPath('/policies', scope.account, { page_size: '1000' })), [scope.account]);
  const [description, setDescription] = useState<string>();
  const { status, run } = useAction();

  if (error) return <p className="error">{error}</p>;
  if (!data) return <p className="muted">…</p>;
  const g = data.group;

  return (
    <div>
      <div className="row">
        <button className="link" onClick={() => scope.open('groups')}>
          ← {t('Groups')}
        </button>
      </div>
      <div className="row between">
        <h3 className="key-title">
          {t('Group')} <span data-testid="iam-group-alias">{g.alias}</span>
        </h3>
        <button
          className="danger"
          onClick={() => {
            if (window.confirm(t('Delete group {alias}? Its members stay; they lose its policies.', { alias: g.alias }))) void run(() => del(iamPath(base, scope.account))).then((ok) => ok && scope.open('groups'));
          }}
        >
          {t('Delete')}
        </button>
      </div>
      <Status {...status} />
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => patch(iamPath(base, scope.account), { description: description ?? g.description }), t('Saved.')).then(reload);
        }}
      >
        <input name="groupDescription" className="wide" placeholder={t('Description')} value={description ?? g.description} onChange={(e) => setDescription(e.target.value)} />
        <button type="submit">{t('Save')}</button>
      </form>
      <div className="settings-grid">
        <AttachCard
          card="members"
          title={t('Members')}
          name="member"
          all={(users.data?.list ?? []).map((u) => u.alias)}
          chosen={data.users.map((u) => u.alias)}
          empty={t('No sub-users yet.')}
          onSave={attach('users')}
        />
        <AttachCard
          card="policies"
          title={t('Policies')}
          name="policy"
          all={(policies.data?.list ?? []).map((p) => p.alias)}
          chosen={data.policies.map((p) => p.alias)}
          empty={t('No policies yet.')}
          onSave={attach('policies')}
          note={t('Every member gets these policies.')}
        />
      </div>
    </div>
  );
}
