// IAM sub-users: the list (create, enable/disable, delete) and one sub-user (password, key pairs — a new pair's
// SecretKey shown once —, its groups and attached policies).
import { useState, type FormEvent } from 'react';
import { del, get, iamPath, patch, post, put } from '../api';
import { CopyButton } from '../CopyButton';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';
import type { IamGroupRow, IamPolicyRow, IamScope, IamUserRow, Paged } from './Iam';

/** Rows per page of the IAM lists. */
export const PAGE_SIZE = 50;

/** Previous/next page buttons for a list of `count` items. */
export function Pager({ page, count, onPage }: { page: number; count: number; onPage: (p: number) => void }) {
  const { t } = useI18n();
  const pages = Math.max(1, Math.ceil(count / PAGE_SIZE));
  if (pages <= 1) return null;
  return (
    <div className="row pager">
      <button disabled={page <= 1} onClick={() => onPage(page - 1)}>
        {t('Previous')}
      </button>
      <span className="muted">{t('Page {page} of {pages}', { page, pages })}</span>
      <button disabled={page >= pages} onClick={() => onPage(page + 1)}>
        {t('Next')}
      </button>
    </div>
  );
}

/** A message line: an error (role alert) or a confirmation. */
export function Status({ text, failed }: { text: string; failed: boolean }) {
  if (!text) return null;
  return (
    <p className={failed ? 'error' : 'note'} role={failed ? 'alert' : 'status'} data-testid="iam-status">
      {text}
    </p>
  );
}

/** Runs `fn`, reporting its outcome through `set`. */
export function useAction(): { status: { text: string; failed: boolean }; run: (fn: () => Promise<unknown>, done?: string) => Promise<boolean> } {
  const { t } = useI18n();
  const [status, setStatus] = useState({ text: '', failed: false });
  const run = async (fn: () => Promise<unknown>, done = ''): Promise<boolean> => {
    setStatus({ text: '', failed: false });
    try {
      await fn();
      if (done) setStatus({ text: done, failed: false });
      return true;
    } catch (err) {
      setStatus({ text: `${t('Failed')}: ${(err as Error).message}`, failed: true });
      return false;
    }
  };
  return { status, run };
}

export function IamUsers({ scope }: { scope: IamScope }) {
  const { t, date } = useI18n();
  const [page, setPage] = useState(1);
  const [prefix, setPrefix] = useState('');
  const { data, error, reload } = useLoad(
    () => get<Paged<IamUserRow>>(iamPath('/users', scope.account, { page: String(page), page_size: String(PAGE_SIZE), ...(prefix ? { alias: prefix } : {}) })),
    [scope.account, page, prefix],
  );
  const [alias, setAlias] = useState('');
  const [password, setPassword] = useState('');
  const { status, run } = useAction();

  const create = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (await run(() => post(iamPath('/users', scope.account), { alias: alias.trim(), password }), t('Created.'))) {
      setAlias('');
      setPassword('');
      reload();
    }
  };
  const setEnabled = (u: IamUserRow, enabled: boolean) => run(() => patch(iamPath(`/users/${encodeURIComponent(u.alias)}`, scope.account), { enabled })).then(reload);
  const remove = (u: IamUserRow): void => {
    if (!window.confirm(t('Delete sub-user {alias}? Its key pairs are deleted with it.', { alias: u.alias }))) return;
    void run(() => del(iamPath(`/users/${encodeURIComponent(u.alias)}`, scope.account))).then(reload);
  };

  return (
    <div>
      <form className="row" onSubmit={(e) => void create(e)}>
        <input name="userAlias" placeholder={t('Sub-user name')} value={alias} onChange={(e) => setAlias(e.target.value)} required autoComplete="off" />
        <input name="userPassword" type="password" placeholder={t('Password (8 characters or more)')} value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="new-password" />
        <button type="submit" className="primary">
          {t('Create sub-user')}
        </button>
        <span className="spacer" />
        <input name="userFilter" placeholder={t('Filter by name prefix')} value={prefix} onChange={(e) => (setPrefix(e.target.value), setPage(1))} />
      </form>
      <Status {...status} />
      {error && <p className="error">{error}</p>}
      <table className="grid" data-testid="iam-users">
        <thead>
          <tr>
            <th>{t('Name')}</th>
            <th>{t('State')}</th>
            <th>{t('Created')}</th>
            <th>{t('Last sign-in')}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.list.map((u) => (
            <tr key={u.alias} className={u.enabled ? '' : 'disabled'}>
              <td>
                <button className="link key" onClick={() => scope.open('users', u.alias)}>
                  {u.alias}
                </button>
              </td>
              <td>
                <span className={`badge ${u.enabled ? 'ok' : 'bad'}`}>{u.enabled ? t('enabled') : t('disabled')}</span>
              </td>
              <td>{date(u.created_at)}</td>
              <td>{u.last_login_time.startsWith('0001-') ? t('never') : date(u.last_login_time)}</td>
              <td className="actions">
                <button onClick={() => void setEnabled(u, !u.enabled)}>{u.enabled ? t('Disable') : t('Enable')}</button>
                <button className="danger" onClick={() => remove(u)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
          {data?.list.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                {t('No sub-users yet.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {data && <Pager page={page} count={data.count} onPage={setPage} />}
    </div>
  );
}

interface KeyRow {
  access_key: string;
  created_at: string;
  enabled: boolean;
}
interface UserDetail {
  user: IamUserRow;
  keys: KeyRow[];
  groups: IamGroupRow[];
  policies: IamPolicyRow[];
}

/** A card of a detail screen attaching aliases (members, groups, policies) with a Picker, and an optional note. */
export function AttachCard({ card, title, note, ...picker }: { card: string; title: string; note?: string } & Parameters<typeof Picker>[0]) {
  return (
    <div className="card" data-card={card}>
      <h3>{title}</h3>
      <Picker {...picker} />
      {note && <p className="muted small">{note}</p>}
    </div>
  );
}

/** Checkboxes choosing a subset of `all` (aliases), saved by `onSave`. */
export function Picker({ name, all, chosen, onSave, empty }: { name: string; all: string[]; chosen: string[]; onSave: (aliases: string[]) => Promise<unknown>; empty: string }) {
  const { t } = useI18n();
  const [picked, setPicked] = useState<Set<string> | undefined>();
  const current = picked ?? new Set(chosen);
  const toggle = (a: string): void => {
    const next = new Set(current);
    if (next.has(a)) next.delete(a);
    else next.add(a);
    setPicked(next);
  };
  return (
    <div data-picker={name}>
      {all.length === 0 && <p className="muted">{empty}</p>}
      <div className="picks">
        {all.map((a) => (
          <label key={a} className="inline">
            <input type="checkbox" name={`${name}:${a}`} checked={current.has(a)} onChange={() => toggle(a)} /> {a}
          </label>
        ))}
      </div>
      {all.length > 0 && (
        <button onClick={() => void onSave([...current].sort()).then(() => setPicked(undefined))} disabled={picked === undefined}>
          {t('Save')}
        </button>
      )}
    </div>
  );
}

export function IamUser({ scope, alias }: { scope: IamScope; alias: string }) {
  const { t, date } = useI18n();
  const base = `/users/${encodeURIComponent(alias)}`;
  const { data, error, reload } = useLoad(() => get<UserDetail>(iamPath(base, scope.account)), [scope.account, alias]);
  /** Saves the aliases attached under `what` (`users`, `groups`, `policies`), then reloads the screen. */
  const attach = (what: 'users' | 'groups' | 'policies') => (aliases: string[]) =>
    run(() => put(iamPath(`${base}/${what}`, scope.account), { [what]: aliases }), t('Saved.')).then(reload);
  const groups = useLoad(() => get<Paged<IamGroupRow>>(iamPath('/groups', scope.account, { page_size: '1000' })), [scope.account]);
  const policies = useLoad(() => get<Paged<IamPolicyRow>>(iamPath('/policies', scope.account, { page_size: '1000' })), [scope.account]);
  const [created, setCreated] = useState<{ access_key: string; secret_key: string }>();
  const [password, setPassword] = useState('');
  const { status, run } = useAction();

  if (error) return <p className="error">{error}</p>;
  if (!data) return <p className="muted">…</p>;
  const u = data.user;
  const keyPath = (ak: string): string => iamPath(`${base}/keys/${encodeURIComponent(ak)}`, scope.account);

  return (
    <div>
      <div className="row">
        <button className="link" onClick={() => scope.open('users')}>
          ← {t('Sub-users')}
        </button>
      </div>
      <div className="row between">
        <h3 className="key-title">
          {t('Sub-user')} <span data-testid="iam-user-alias">{u.alias}</span>{' '}
          <span className={`badge ${u.enabled ? 'ok' : 'bad'}`}>{u.enabled ? t('enabled') : t('disabled')}</span>
        </h3>
        <div className="row">
          <button onClick={() => void run(() => patch(iamPath(base, scope.account), { enabled: !u.enabled })).then(reload)}>{u.enabled ? t('Disable') : t('Enable')}</button>
          <button
            className="danger"
            onClick={() => {
              if (window.confirm(t('Delete sub-user {alias}? Its key pairs are deleted with it.', { alias: u.alias }))) void run(() => del(iamPath(base, scope.account))).then((ok) => ok && scope.open('users'));
            }}
          >
            {t('Delete')}
          </button>
        </div>
      </div>
      <Status {...status} />
      <dl className="facts">
        <dt>IUID</dt>
        <dd className="mono">{u.iuid}</dd>
        <dt>{t('Created')}</dt>
        <dd>{date(u.created_at)}</dd>
        <dt>{t('Last sign-in')}</dt>
        <dd>{u.last_login_time.startsWith('0001-') ? t('never') : date(u.last_login_time)}</dd>
      </dl>
      <div className="settings-grid">
        <div className="card" data-card="keys">
          <h3>{t('Key pairs')}</h3>
          <button className="primary" onClick={() => void run(async () => setCreated(await post(iamPath(`${base}/keys`, scope.account)))).then(reload)}>
            {t('Create key pair')}
          </button>
          {created && (
            <div className="note">
              <p>{t('Copy the SecretKey now: it is not shown again.')}</p>
              <p>
                AccessKey: <code data-testid="new-ak">{created.access_key}</code> <CopyButton text={created.access_key} label={t('Copy AccessKey')} />
              </p>
              <p>
                SecretKey: <code data-testid="new-sk">{created.secret_key}</code> <CopyButton text={created.secret_key} label={t('Copy SecretKey')} />
              </p>
            </div>
          )}
          <table className="grid" data-testid="iam-keys">
            <tbody>
              {data.keys.map((k) => (
                <tr key={k.access_key} className={k.enabled ? '' : 'disabled'}>
                  <td>
                    <div className="mono" data-ak={k.access_key}>
                      {k.access_key}
                    </div>
                    <span className={`badge ${k.enabled ? 'ok' : 'bad'}`}>{k.enabled ? t('enabled') : t('disabled')}</span> <span className="muted small">{date(k.created_at)}</span>
                  </td>
                  <td className="actions">
                    <button onClick={() => void run(() => patch(keyPath(k.access_key), { enabled: !k.enabled })).then(reload)}>{k.enabled ? t('Disable') : t('Enable')}</button>
                    <button
                      className="danger"
                      onClick={() => {
                        if (window.confirm(t('Delete the key pair {ak}?', { ak: k.access_key }))) void run(() => del(keyPath(k.access_key))).then(reload);
                      }}
                    >
                      {t('Delete')}
                    </button>
                  </td>
                </tr>
              ))}
              {data.keys.length === 0 && (
                <tr>
                  <td className="muted">{t('No key pairs yet.')}</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
        <AttachCard
          card="groups"
          title={t('Groups')}
          name="group"
          all={(groups.data?.list ?? []).map((g) => g.alias)}
          chosen={data.groups.map((g) => g.alias)}
          empty={t('No groups yet.')}
          onSave={attach('groups')}
        />
        <AttachCard
          card="policies"
          title={t('Policies')}
          name="policy"
          all={(policies.data?.list ?? []).map((p) => p.alias)}
          chosen={data.policies.map((p) => p.alias)}
          empty={t('No policies yet.')}
          onSave={attach('policies')}
          note={t('Policies of its groups apply too.')}
        />
        <div className="card" data-card="password">
          <h3>{t('Password')}</h3>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              void run(() => patch(iamPath(base, scope.account), { password }), t('Saved.')).then((ok) => ok && setPassword(''));
            }}
          >
            <input name="newPassword" type="password" placeholder={t('New password')} value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="new-password" />
            <button type="submit">{t('Change password')}</button>
          </form>
        </div>
      </div>
    </div>
  );
}
