// IAM: an account's sub-users (key pairs, groups, policies), groups, policies (the policy editor) and audit log,
// through /api/iam/… (src/console/api-iam-*.ts). Hash routes: #/iam/users[/<alias>], #/iam/groups[/<alias>],
// #/iam/policies[/<alias>|/+], #/iam/audits; the root key picks the account with ?account=<AccessKey>.
import type { Session } from '../api';
import { get } from '../api';
import { go } from '../App';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';
import { IamAudits } from './IamAudits';
import { IamGroup, IamGroups } from './IamGroups';
import { IamPolicies, PolicyEditor } from './IamPolicies';
import { IamUser, IamUsers } from './IamUsers';

/** What every IAM screen gets: the account ('' = the session's own) and how to go to another IAM screen. */
export interface IamScope {
  account: string;
  /** Goes to `#/iam/<tab>[/<alias>]`, keeping the account. */
  open(tab: string, alias?: string): void;
}

interface KeyList {
  root: { accessKey: string };
  accounts: Array<{ accessKey: string }>;
}

export interface IamUserRow {
  alias: string;
  iuid: number;
  enabled: boolean;
  created_at: string;
  last_login_time: string;
}
export interface IamGroupRow {
  alias: string;
  description: string;
  created_at: string;
}
export interface Statement {
  action: string[];
  resource: string[];
  effect: 'Allow' | 'Deny';
}
export interface IamPolicyRow {
  alias: string;
  description: string;
  created_at: string;
  updated_at: string;
  statement: Statement[];
}
export interface Paged<T> {
  count: number;
  list: T[];
}

const TABS: Array<[string, string]> = [
  ['users', 'Sub-users'],
  ['groups', 'Groups'],
  ['policies', 'Policies'],
  ['audits', 'Audit log'],
];

export function Iam({ session, arg, query }: { session: Session; arg: string; query: URLSearchParams }) {
  const { t } = useI18n();
  const slash = arg.indexOf('/');
  const tab = (slash < 0 ? arg : arg.slice(0, slash)) || 'users';
  const alias = slash < 0 ? '' : arg.slice(slash + 1);
  const account = session.root ? (query.get('account') ?? '') : '';
  const keys = useLoad(() => (session.root ? get<KeyList>('/api/keys') : Promise.resolve(undefined)), [session.root]);
  const scope: IamScope = {
    account,
    open: (to, name = '') => {
      const q = account ? `?${new URLSearchParams({ account }).toString()}` : '';
      location.hash = `#/iam/${to}${name ? `/${encodeURIComponent(name)}` : ''}${q}`;
    },
  };

  let body;
  switch (tab) {
    case 'groups':
      body = alias ? <IamGroup scope={scope} alias={alias} key={`${account}/${alias}`} /> : <IamGroups scope={scope} key={account} />;
      break;
    case 'policies':
      body = alias ? <PolicyEditor scope={scope} alias={alias === '+' ? '' : alias} key={`${account}/${alias}`} /> : <IamPolicies scope={scope} key={account} />;
      break;
    case 'audits':
      body = <IamAudits scope={scope} key={account} />;
      break;
    default:
      body = alias ? <IamUser scope={scope} alias={alias} key={`${account}/${alias}`} /> : <IamUsers scope={scope} key={account} />;
  }

  return (
    <section className="iam">
      <div className="row between">
        <h2>{t('IAM')}</h2>
        {session.root && keys.data && (
          <label className="inline">
            {t('Account')}&nbsp;
            <select
              name="iamAccount"
              value={account}
              onChange={(e) => go('iam', tab, e.target.value ? { account: e.target.value } : {})}
            >
              <option value="">{t('root')} ({keys.data.root.accessKey.slice(0, 8)}…)</option>
              {keys.data.accounts.map((k) => (
                <option key={k.accessKey} value={k.accessKey}>
                  {k.accessKey}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <p className="muted small">{t('Sub-users get key pairs of their own; policies attached to them or to their groups say what they may do.')}</p>
      <div className="tabs" role="tablist">
        {TABS.map(([id, label]) => (
          <button key={id} role="tab" aria-selected={tab === id} className={tab === id ? 'active' : ''} onClick={() => scope.open(id)}>
            {t(label)}
          </button>
        ))}
      </div>
      {body}
    </section>
  );
}
