// IAM policies: the list and the policy editor — statement rows (effect, actions from GET /api/iam/actions,
// resources `qrn:kodo:::<bucket>/<prefix>*`), checked here as the server checks them and, when the server refuses
// anyway (400 `invalid IAM policy: statement[i].resource[j]: …`), its message shown against that field.
import { useState } from 'react';
import { ApiError, del, get, iamPath, patch, post } from '../api';
import { useI18n } from '../i18n';
import { useLoad } from '../useLoad';
import type { BucketRow } from './Buckets';
import type { IamGroupRow, IamPolicyRow, IamScope, IamUserRow, Paged, Statement } from './Iam';
import { PAGE_SIZE, Pager, Status, useAction } from './IamUsers';

interface ActionRow {
  action: string;
  description: string;
  scope: 'resource' | 'service';
}

export function IamPolicies({ scope }: { scope: IamScope }) {
  const { t, date } = useI18n();
  const [page, setPage] = useState(1);
  const { data, error, reload } = useLoad(
    () => get<Paged<IamPolicyRow>>(iamPath('/policies', scope.account, { page: String(page), page_size: String(PAGE_SIZE) })),
    [scope.account, page],
  );
  const { status, run } = useAction();
  const remove = (p: IamPolicyRow): void => {
    if (!window.confirm(t('Delete policy {alias}? It is detached from every sub-user and group.', { alias: p.alias }))) return;
    void run(() => del(iamPath(`/policies/${encodeURIComponent(p.alias)}`, scope.account))).then(reload);
  };
  return (
    <div>
      <div className="row">
        <button className="primary" onClick={() => scope.open('policies', '+')}>
          {t('New policy')}
        </button>
      </div>
      <Status {...status} />
      {error && <p className="error">{error}</p>}
      <table className="grid" data-testid="iam-policies">
        <thead>
          <tr>
            <th>{t('Name')}</th>
            <th>{t('Description')}</th>
            <th>{t('Statements')}</th>
            <th>{t('Updated')}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.list.map((p) => (
            <tr key={p.alias}>
              <td>
                <button className="link key" onClick={() => scope.open('policies', p.alias)}>
                  {p.alias}
                </button>
              </td>
              <td>{p.description}</td>
              <td className="small">
                {p.statement.map((s, i) => (
                  <div key={i}>
                    <span className={`badge ${s.effect === 'Allow' ? 'ok' : 'bad'}`}>{s.effect}</span> <code>{s.action.join(', ')}</code>
                  </div>
                ))}
              </td>
              <td>{date(p.updated_at)}</td>
              <td className="actions">
                <button className="danger" onClick={() => remove(p)}>
                  {t('Delete')}
                </button>
              </td>
            </tr>
          ))}
          {data?.list.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                {t('No policies yet.')}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {data && <Pager page={page} count={data.count} onPage={setPage} />}
    </div>
  );
}

/** One statement being edited: resources as the textarea's text (one per line). */
interface Row {
  effect: 'Allow' | 'Deny';
  action: string[];
  resources: string;
}

const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;
const newRow = (): Row => ({ effect: 'Allow', action: [], resources: '' });
const linesOf = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/**
 * The field a server refusal names: `alias`, `description`, `statement`, or `statement[i].action|resource|effect`;
 * '' when it names none (the message shows above the form).
 */
export function fieldOf(message: string): string {
  const m = /(statement(?:\[(\d+)\])?(?:\.(action|resource|effect))?)(?:\[\d+\])?: /.exec(message);
  if (m) return m[2] !== undefined && m[3] !== undefined ? `statement[${m[2]}].${m[3]}` : 'statement';
  if (/IAM alias|IAM policy exists/.test(message)) return 'alias';
  if (/^description /.test(message)) return 'description';
  return '';
}

function FieldError({ errors, field }: { errors: Record<string, string>; field: string }) {
  const text = errors[field];
  if (!text) return null;
  return (
    <span className="error small field-error" role="alert" data-field-error={field}>
      {text}
    </span>
  );
}

export function PolicyEditor({ scope, alias }: { scope: IamScope; alias: string }) {
  const { t } = useI18n();
  const creating = alias === '';
  const base = `/policies/${encodeURIComponent(alias)}`;
  const actions = useLoad(() => get<{ list: ActionRow[] }>('/api/iam/actions'), []);
  const buckets = useLoad(() => get<BucketRow[]>('/api/buckets'), []);
  const detail = useLoad(
    () => (creating ? Promise.resolve(undefined) : get<{ policy: IamPolicyRow; users: IamUserRow[]; groups: IamGroupRow[] }>(iamPath(base, scope.account))),
    [scope.account, alias],
  );
  const [form, setForm] = useState<{ alias: string; description: string; rows: Row[] }>();
  const [errors, setErrors] = useState<Record<string, string>>({});
  const { status, run } = useAction();

  const loaded = detail.data?.policy;
  const current = form ?? {
    alias: loaded?.alias ?? '',
    description: loaded?.description ?? '',
    rows: loaded ? loaded.statement.map((s: Statement) => ({ effect: s.effect, action: s.action, resources: s.resource.join('\n') })) : [newRow()],
  };
  const edit = (change: Partial<typeof current>): void => setForm({ ...current, ...change });
  const editRow = (i: number, change: Partial<Row>): void => edit({ rows: current.rows.map((r, j) => (j === i ? { ...r, ...change } : r)) });
  const scopeOf = (a: string): string => actions.data?.list.find((x) => x.action === a)?.scope ?? 'resource';
  const statements = current.rows.map((r) => ({ effect: r.effect, action: r.action, resource: linesOf(r.resources) }));

  /** The checks the server makes, plus one it cannot: resource-level actions without a resource grant nothing. */
  const check = (): Record<string, string> => {
    const out: Record<string, string> = {};
    if (!ALIAS.test(current.alias)) out.alias = t('1–64 letters, digits, _ . @ -, starting with a letter or digit');
    if (current.rows.length === 0) out.statement = t('Add at least one statement');
    statements.forEach((s, i) => {
      if (s.action.length === 0) out[`statement[${i}].action`] = t('Choose at least one action');
      const bad = s.resource.find((r) => r !== '*' && !(r.startsWith('qrn:') && r.split(':').length >= 5 && r.split(':').slice(4).join(':') !== ''));
      if (bad !== undefined) out[`statement[${i}].resource`] = t('"{resource}" is not * or qrn:kodo:::<bucket>/<prefix>*', { resource: bad });
      else if (s.resource.length === 0 && s.action.some((a) => scopeOf(a) !== 'service')) {
        out[`statement[${i}].resource`] = t('Add a resource (qrn:kodo:::<bucket>/<prefix>*): without one these actions grant nothing');
      }
    });
    return out;
  };

  const save = async (): Promise<void> => {
    const found = check();
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    const body = { description: current.description, statement: statements };
    let refusal = '';
    const ok = await run(async () => {
      try {
        if (creating) await post(iamPath('/policies', scope.account), { alias: current.alias, ...body });
        else await patch(iamPath(base, scope.account), body);
      } catch (err) {
        if (err instanceof ApiError && fieldOf(err.message)) refusal = err.message;
        else throw err;
      }
    });
    if (refusal) {
      setErrors({ [fieldOf(refusal)]: refusal });
      return;
    }
    if (!ok) return;
    setForm(undefined);
    if (creating) scope.open('policies', current.alias);
    else detail.reload();
  };

  if (detail.error) return <p className="error">{detail.error}</p>;
  if (!creating && !loaded) return <p className="muted">…</p>;
  const unused = (row: Row): ActionRow[] => (actions.data?.list ?? []).filter((a) => !row.action.includes(a.action));

  return (
    <div className="policy-editor">
      <div className="row">
        <button className="link" onClick={() => scope.open('policies')}>
          ← {t('Policies')}
        </button>
      </div>
      <h3>{creating ? t('New policy') : t('Policy {alias}', { alias })}</h3>
      <Status {...status} />
      <label>
        {t('Name')}
        <input name="policyAlias" value={current.alias} disabled={!creating} onChange={(e) => edit({ alias: e.target.value })} autoComplete="off" />
        <FieldError errors={errors} field="alias" />
      </label>
      <label>
        {t('Description')}
        <input name="policyDescription" value={current.description} onChange={(e) => edit({ description: e.target.value })} />
        <FieldError errors={errors} field="description" />
      </label>
      <FieldError errors={errors} field="statement" />
      <datalist id="resource-suggestions">
        <option value="qrn:kodo:::*" />
        {(buckets.data ?? []).flatMap((b) => [<option key={b.name} value={`qrn:kodo:::${b.name}/*`} />])}
      </datalist>
      {current.rows.map((row, i) => (
        <div className="card statement" key={i} data-statement={i}>
          <div className="row between">
            <strong>{t('Statement {n}', { n: i + 1 })}</strong>
            <button className="danger" onClick={() => edit({ rows: current.rows.filter((_, j) => j !== i) })}>
              {t('Remove statement')}
            </button>
          </div>
          <label>
            {t('Effect')}
            <select name={`effect-${i}`} value={row.effect} onChange={(e) => editRow(i, { effect: e.target.value as Row['effect'] })}>
              <option value="Allow">{t('Allow')}</option>
              <option value="Deny">{t('Deny')}</option>
            </select>
            <FieldError errors={errors} field={`statement[${i}].effect`} />
          </label>
          <div className="field-block">
            <span className="muted">{t('Actions')}</span>
            <div className="chips">
              {row.action.map((a) => (
                <span className="chip" key={a}>
                  <code>{a}</code>
                  <button className="link" aria-label={t('Remove {action}', { action: a })} onClick={() => editRow(i, { action: row.action.filter((x) => x !== a) })}>
                    ×
                  </button>
                </span>
              ))}
            </div>
            <select name={`add-action-${i}`} value="" onChange={(e) => e.target.value && editRow(i, { action: [...row.action, e.target.value] })}>
              <option value="">{t('Add an action…')}</option>
              {unused(row).map((a) => (
                <option key={a.action} value={a.action}>
                  {a.action} — {a.description}
                </option>
              ))}
            </select>
            <FieldError errors={errors} field={`statement[${i}].action`} />
          </div>
          <label>
            {t('Resources, one per line')}
            <textarea name={`resources-${i}`} rows={3} value={row.resources} placeholder="qrn:kodo:::my-bucket/uploads/*" onChange={(e) => editRow(i, { resources: e.target.value })} />
            <FieldError errors={errors} field={`statement[${i}].resource`} />
          </label>
          <div className="row">
            <input list="resource-suggestions" name={`add-resource-${i}`} placeholder="qrn:kodo:::<bucket>/<prefix>*" onKeyDown={(e) => {
              if (e.key !== 'Enter') return;
              e.preventDefault();
              const v = e.currentTarget.value.trim();
              if (v) editRow(i, { resources: `${row.resources.trim()}\n${v}`.trim() });
              e.currentTarget.value = '';
            }} />
            <span className="muted small">{t('Enter adds it')}</span>
          </div>
        </div>
      ))}
      <div className="row">
        <button onClick={() => edit({ rows: [...current.rows, newRow()] })}>{t('Add statement')}</button>
        <button className="primary" name="savePolicy" onClick={() => void save()}>
          {creating ? t('Create policy') : t('Save')}
        </button>
      </div>
      <details>
        <summary>JSON</summary>
        <pre className="text-preview">{JSON.stringify({ statement: statements }, null, 2)}</pre>
      </details>
      {detail.data && (
        <p className="muted">
          {t('Attached to')}: {[...detail.data.users.map((u) => `${t('sub-user')} ${u.alias}`), ...detail.data.groups.map((g) => `${t('group')} ${g.alias}`)].join(', ') || t('nothing yet')}
        </p>
      )}
    </div>
  );
}
