/**
 * `granary iam user|keys|group|policy|actions|audits …`: Kodo IAM sub-users, their key pairs, groups and members,
 * policies and their attachments, the action catalogue and the audit log (docs/reference/iam.md,
 * docs/guides/iam.md), in two forms:
 * - offline on the data dir (or the cluster's PostgreSQL; the data-dir flags), acting in the root key's account or
 *   with `--owner <AccessKey>` in an account's (cli/iam-offline.ts);
 * - on a remote with `--remote <name>` (`granary remote list`): the remote's Kodo IAM API, signed with the remote's
 *   key pair, whose account it acts in (transfer/iam-client.ts).
 * Output: tab-separated lines (lists: one object a line), or with `--json` the API's JSON (`data`): one array for a
 * list, one object otherwise, `{}` for a change without a result. Errors print `granary: <message>` and exit 1.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { IamBackend, IamJson, IamLinkChange, IamStatement } from '../transfer/iam-client.js';
import type { Opts } from './context.js';
import { withDataDir } from './data-dir-flags.js';

/** The options of every IAM command (commander's, by camel-case name). */
interface IamOpts {
  [flag: string]: unknown;
  json?: boolean;
  remote?: string;
  owner?: string;
  dataDir?: string;
  metadata?: string;
  createDataDir?: boolean | string;
}

/** Adds the options every IAM command takes: the data-dir flags, `--remote`, `--owner`, `--json`. */
function leaf(cmd: Command): Command {
  return withDataDir(cmd)
    .option('--remote <name>', 'act on a remote (granary remote list) through its Kodo IAM API, in its key pair\'s account')
    .option('--owner <ak>', "data dir: the account (AccessKey) whose IAM objects to manage (default: the root key's)")
    .option('--json', "print the API's JSON (lists: one array; changes without a result: {})");
}

/** The backend of a command: the remote's API, or the data dir (see the module comment). */
async function backendOf(o: IamOpts): Promise<IamBackend> {
  if (o.remote !== undefined) {
    if (o.dataDir !== undefined || o.metadata !== undefined || o.createDataDir) throw new Error('--remote acts on a remote: leave out --data-dir, --metadata and --create-data-dir');
    if (o.owner !== undefined) throw new Error("--owner is for the data dir: a remote acts in its key pair's account");
    const [{ RemoteStore }, { RemoteIam }] = await Promise.all([import('../transfer/remotes.js'), import('../transfer/iam-client.js')]);
    return new RemoteIam(await new RemoteStore().get(o.remote));
  }
  const [{ configFrom, offlineContext }, { OfflineIam }] = await Promise.all([import('./context.js'), import('./iam-offline.js')]);
  const g = await offlineContext(configFrom(o as Opts), o.createDataDir !== undefined && o.createDataDir !== false);
  const closeStores = async (): Promise<void> => {
    await g.meta.close();
    await g.blobs.close?.();
  };
  const owner = o.owner ?? g.keys.accessKey;
  if (!g.keyIndex.isRoot(owner) && !g.keyIndex.pairOf(owner)) {
    await closeStores();
    throw new Error(`no account key ${owner} (granary keys list)`);
  }
  return new OfflineIam(g, owner, closeStores);
}

/** Runs `fn` with the command's backend, closed after. */
async function run(o: IamOpts, fn: (b: IamBackend) => Promise<void>): Promise<void> {
  const b = await backendOf(o);
  try {
    await fn(b);
  } finally {
    await b.close();
  }
}

const out = (line: string): void => void process.stdout.write(`${line}\n`);
const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** A list: a JSON array, or one tab-separated line per item. */
function printList(o: IamOpts, rows: IamJson[], columns: (r: IamJson) => unknown[]): void {
  if (o.json) out(JSON.stringify(rows));
  else for (const r of rows) out(columns(r).map(str).join('\t'));
}

/** One object: JSON, or `name<TAB>value` lines. */
function printObject(o: IamOpts, obj: IamJson, fields: Array<[string, unknown]>): void {
  if (o.json) out(JSON.stringify(obj));
  else for (const [name, value] of fields) out(`${name}\t${Array.isArray(value) ? value.join(', ') : str(value)}`);
}

/** A change without a result: `{}` with --json, else `text`. */
function printDone(o: IamOpts, text: string): void {
  out(o.json ? '{}' : text);
}

/** `1 statement`, `2 statements`. */
const statementCount = (n: number): string => `${n} statement${n === 1 ? '' : 's'}`;
const aliases = (rows: IamJson[]): string[] => rows.map((r) => str(r.alias));
const state = (r: IamJson): string => (r.enabled === false ? 'disabled' : 'enabled');

/** The password of `--password`, or the first line of stdin with `--password-stdin`. */
async function passwordOf(o: IamOpts & { password?: string; passwordStdin?: boolean }): Promise<string | undefined> {
  if (o.password !== undefined && o.passwordStdin) throw new Error('give either --password or --password-stdin');
  if (!o.passwordStdin) return o.password;
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.split(/\r?\n/)[0] ?? '';
}

/** `a,b` and repeated flags → the list of values. */
const collect = (v: string, prev: string[] = []): string[] => [...prev, ...v.split(',').map((x) => x.trim()).filter((x) => x !== '')];

/** Statements from JSON text: an array of statements, one statement, or an object with `statement`. */
function statementsFromJson(text: string, where: string): IamStatement[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${where} is not JSON`);
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && 'statement' in v) v = (v as { statement: unknown }).statement;
  return (Array.isArray(v) ? v : [v]) as IamStatement[];
}

interface PolicyOpts extends IamOpts {
  description?: string;
  file?: string;
  statement?: string;
  allow?: string[];
  deny?: string[];
  resource?: string[];
}

/** The statements a policy command gives (file, --statement, --allow/--deny with --resource); undefined: none. */
async function statementsOf(o: PolicyOpts): Promise<IamStatement[] | undefined> {
  const out: IamStatement[] = [];
  if (o.file !== undefined) {
    const text = o.file === '-' ? await readStdin() : await readFile(o.file, 'utf8').catch((err: Error) => Promise.reject(new Error(`cannot read ${o.file}: ${err.message}`)));
    out.push(...statementsFromJson(text, o.file));
  }
  if (o.statement !== undefined) out.push(...statementsFromJson(o.statement, '--statement'));
  if ((o.allow || o.deny) === undefined && o.resource) throw new Error('--resource goes with --allow or --deny');
  if (o.allow) out.push({ effect: 'Allow', action: o.allow, resource: o.resource ?? [] });
  if (o.deny) out.push({ effect: 'Deny', action: o.deny, resource: o.resource ?? [] });
  return out.length === 0 ? undefined : out;
}

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}

/** The statement options of `policy create|update`. */
function withStatements(cmd: Command): Command {
  return cmd
    .option('--description <text>', 'what the policy is for')
    .option('--file <path>', 'statements as JSON: [{"action":[…],"resource":[…],"effect":"Allow"}] or {"statement":[…]} (- for stdin)')
    .option('--statement <json>', 'statements as JSON text (same forms as --file)')
    .option('--allow <actions>', 'a statement allowing these actions (kodo/Get,kodo/List; repeatable)', collect)
    .option('--deny <actions>', 'a statement denying these actions (repeatable)', collect)
    .option('--resource <qrn>', 'the resources of --allow/--deny: qrn:kodo:::<bucket>/<prefix>* (repeatable)', collect);
}

/** Adds `user attach|detach` or `group attach|detach|add|remove`: one link change of `what` from `<alias>`. */
function linkCommand(parent: Command, name: string, args: string, describe: string, change: IamLinkChange, fn: (b: IamBackend, alias: string, change: IamLinkChange, to: string[]) => Promise<void>, done: (alias: string, to: string[]) => string): void {
  leaf(parent.command(`${name} ${args}`).description(describe)).action((alias: string, to: string[], o: IamOpts) =>
    run(o, async (b) => {
      await fn(b, alias, change, to);
      printDone(o, done(alias, to));
    }),
  );
}

function addUserCommands(iam: Command): void {
  const user = iam.command('user').description('sub-users: list, create, get, update, delete, attach/detach policies');
  leaf(user.command('list').description('list sub-users: alias, enabled|disabled, iuid, created'))
    .option('--prefix <p>', 'only aliases starting with p')
    .action((o: IamOpts & { prefix?: string }) => run(o, async (b) => printList(o, await b.listUsers(o.prefix), (u) => [u.alias, state(u), u.iuid, u.created_at])));
  leaf(user.command('create <alias>').description('create a sub-user (1–64 of A-Z a-z 0-9 _ . @ -)'))
    .option('--password <pw>', 'its console password (8–128 characters)')
    .option('--password-stdin', 'read the password from the first line of stdin')
    .action((alias: string, o: IamOpts & { password?: string; passwordStdin?: boolean }) =>
      run(o, async (b) => {
        const password = await passwordOf(o);
        if (password === undefined) throw new Error('user create needs --password <pw> or --password-stdin');
        const u = await b.createUser(alias, password);
        if (o.json) out(JSON.stringify(u));
        else out(`created sub-user ${str(u.alias)} (iuid ${str(u.iuid)})`);
      }),
    );
  leaf(user.command('get <alias>').description('a sub-user, its groups and its own policies')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      const [u, groups, policies] = await Promise.all([b.getUser(alias), b.userGroups(alias), b.userPolicies(alias)]);
      const all = { ...u, groups: aliases(groups), policies: aliases(policies) };
      printObject(o, all, [
        ['alias', u.alias],
        ['state', state(u)],
        ['iuid', u.iuid],
        ['created', u.created_at],
        ['last sign-in', u.last_login_time],
        ['groups', all.groups],
        ['policies', all.policies],
      ]);
    }),
  );
  leaf(user.command('update <alias>').description('enable or disable a sub-user, or change its password'))
    .option('--enable', 'enable it')
    .option('--disable', 'disable it')
    .option('--password <pw>', 'a new password (8–128 characters)')
    .option('--password-stdin', 'read the new password from the first line of stdin')
    .action((alias: string, o: IamOpts & { enable?: boolean; disable?: boolean; password?: string; passwordStdin?: boolean }) =>
      run(o, async (b) => {
        if (o.enable && o.disable) throw new Error('give either --enable or --disable');
        const password = await passwordOf(o);
        if (!o.enable && !o.disable && password === undefined) throw new Error('user update needs --enable, --disable or a password');
        const u = await b.updateUser(alias, { ...(o.enable ? { enabled: true } : o.disable ? { enabled: false } : {}), ...(password !== undefined ? { password } : {}) });
        if (o.json) out(JSON.stringify(u));
        else out(`sub-user ${alias}: ${state(u)}${password !== undefined ? ', password changed' : ''}`);
      }),
    );
  leaf(user.command('delete <alias>').description('delete a sub-user and its key pairs')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      await b.deleteUser(alias);
      printDone(o, `deleted sub-user ${alias}`);
    }),
  );
  const policies = (b: IamBackend, alias: string, change: IamLinkChange, to: string[]) => b.changeUserPolicies(alias, change, to);
  linkCommand(user, 'attach', '<alias> <policy...>', 'attach policies to a sub-user', 'add', policies, (a, to) => `attached ${to.join(', ')} to sub-user ${a}`);
  linkCommand(user, 'detach', '<alias> <policy...>', 'detach policies from a sub-user', 'remove', policies, (a, to) => `detached ${to.join(', ')} from sub-user ${a}`);
}

function addKeyCommands(iam: Command): void {
  const keys = iam.command('keys').description("sub-users' key pairs: list, create, enable, disable, delete");
  leaf(keys.command('list <user>').description("a sub-user's key pairs: AccessKey, enabled|disabled, created (--json: with the SecretKey)")).action((alias: string, o: IamOpts) =>
    run(o, async (b) => printList(o, await b.listKeys(alias), (k) => [k.access_key, state(k), k.created_at])),
  );
  leaf(keys.command('create <user>').description('create a key pair for a sub-user (at most 20 each)')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      const k = await b.createKey(alias);
      if (o.json) out(JSON.stringify(k));
      else out(`AccessKey: ${str(k.access_key)}\nSecretKey: ${str(k.secret_key)}`);
    }),
  );
  for (const [name, enabled] of [['enable', true], ['disable', false]] as const) {
    leaf(keys.command(`${name} <user> <ak>`).description(`${name} a key pair of a sub-user`)).action((alias: string, ak: string, o: IamOpts) =>
      run(o, async (b) => {
        await b.setKeyEnabled(alias, ak, enabled);
        printDone(o, `${enabled ? 'enabled' : 'disabled'} key ${ak} of sub-user ${alias}`);
      }),
    );
  }
  leaf(keys.command('delete <user> <ak>').description('delete a key pair of a sub-user')).action((alias: string, ak: string, o: IamOpts) =>
    run(o, async (b) => {
      await b.deleteKey(alias, ak);
      printDone(o, `deleted key ${ak} of sub-user ${alias}`);
    }),
  );
}

function addGroupCommands(iam: Command): void {
  const group = iam.command('group').description('groups: list, create, get, update, delete, members (add/remove), attach/detach policies');
  leaf(group.command('list').description('list groups: alias, description, created')).action((o: IamOpts) =>
    run(o, async (b) => printList(o, await b.listGroups(), (g) => [g.alias, g.description, g.created_at])),
  );
  leaf(group.command('create <alias>').description('create a group'))
    .option('--description <text>', 'what the group is for', '')
    .action((alias: string, o: IamOpts & { description: string }) =>
      run(o, async (b) => {
        const g = await b.createGroup(alias, o.description);
        if (o.json) out(JSON.stringify(g));
        else out(`created group ${str(g.alias)}`);
      }),
    );
  leaf(group.command('get <alias>').description('a group, its members and its policies')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      const [g, users, policies] = await Promise.all([b.getGroup(alias), b.groupUsers(alias), b.groupPolicies(alias)]);
      const all = { ...g, users: aliases(users), policies: aliases(policies) };
      printObject(o, all, [
        ['alias', g.alias],
        ['description', g.description],
        ['created', g.created_at],
        ['members', all.users],
        ['policies', all.policies],
      ]);
    }),
  );
  leaf(group.command('update <alias>').description("change a group's description or rename it (members and policies stay)"))
    .option('--description <text>', 'a new description')
    .option('--rename <alias>', 'a new alias')
    .action((alias: string, o: IamOpts & { description?: string; rename?: string }) =>
      run(o, async (b) => {
        if (o.description === undefined && o.rename === undefined) throw new Error('group update needs --description or --rename');
        const g = await b.updateGroup(alias, { ...(o.rename !== undefined ? { alias: o.rename } : {}), ...(o.description !== undefined ? { description: o.description } : {}) });
        if (o.json) out(JSON.stringify(g));
        else out(`updated group ${str(g.alias)}`);
      }),
    );
  leaf(group.command('delete <alias>').description('delete a group (its members stay)')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      await b.deleteGroup(alias);
      printDone(o, `deleted group ${alias}`);
    }),
  );
  const members = (b: IamBackend, alias: string, change: IamLinkChange, to: string[]) => b.changeGroupUsers(alias, change, to);
  linkCommand(group, 'add', '<group> <user...>', 'add sub-users to a group', 'add', members, (a, to) => `added ${to.join(', ')} to group ${a}`);
  linkCommand(group, 'remove', '<group> <user...>', 'remove sub-users from a group', 'remove', members, (a, to) => `removed ${to.join(', ')} from group ${a}`);
  const policies = (b: IamBackend, alias: string, change: IamLinkChange, to: string[]) => b.changeGroupPolicies(alias, change, to);
  linkCommand(group, 'attach', '<group> <policy...>', 'attach policies to a group (every member gets them)', 'add', policies, (a, to) => `attached ${to.join(', ')} to group ${a}`);
  linkCommand(group, 'detach', '<group> <policy...>', 'detach policies from a group', 'remove', policies, (a, to) => `detached ${to.join(', ')} from group ${a}`);
}

function addPolicyCommands(iam: Command): void {
  const policy = iam.command('policy').description('policies: list, create, get, update, delete');
  leaf(policy.command('list').description('list policies: alias, statements, description')).action((o: IamOpts) =>
    run(o, async (b) =>
      printList(o, await b.listPolicies(), (p) => [p.alias, statementCount((p.statement as unknown[] | undefined)?.length ?? 0), p.description]),
    ),
  );
  withStatements(leaf(policy.command('create <alias>').description('create a policy: statements from --file, --statement or --allow/--deny with --resource'))).action(
    (alias: string, o: PolicyOpts) =>
      run(o, async (b) => {
        const statements = await statementsOf(o);
        if (statements === undefined) throw new Error('policy create needs statements: --allow <actions> --resource <qrn>, --file <json> or --statement <json>');
        const p = await b.createPolicy(alias, o.description ?? '', statements);
        if (o.json) out(JSON.stringify(p));
        else out(`created policy ${str(p.alias)} (${statementCount(statements.length)})`);
      }),
  );
  leaf(policy.command('get <alias>').description('a policy as JSON, with the sub-users and groups it is attached to')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      const [p, users, groups] = await Promise.all([b.getPolicy(alias), b.policyUsers(alias), b.policyGroups(alias)]);
      const all = { ...p, users: aliases(users), groups: aliases(groups) };
      out(o.json ? JSON.stringify(all) : JSON.stringify(all, null, 2));
    }),
  );
  withStatements(leaf(policy.command('update <alias>').description("change a policy's description or replace its statements"))).action(
    (alias: string, o: PolicyOpts) =>
      run(o, async (b) => {
        const statements = await statementsOf(o);
        if (statements === undefined && o.description === undefined) throw new Error('policy update needs --description or statements');
        const p = await b.updatePolicy(alias, { ...(o.description !== undefined ? { description: o.description } : {}), ...(statements ? { statement: statements } : {}) });
        if (o.json) out(JSON.stringify(p));
        else out(`updated policy ${str(p.alias)}`);
      }),
  );
  leaf(policy.command('delete <alias>').description('delete a policy (detached everywhere)')).action((alias: string, o: IamOpts) =>
    run(o, async (b) => {
      await b.deletePolicy(alias);
      printDone(o, `deleted policy ${alias}`);
    }),
  );
}

/** Adds `iam …`. */
export function addIamCommands(program: Command): void {
  const iam = program.command('iam').description('Kodo IAM: sub-users, their key pairs, groups, policies, audits (offline, or --remote <name>)');
  addUserCommands(iam);
  addKeyCommands(iam);
  addGroupCommands(iam);
  addPolicyCommands(iam);
  leaf(iam.command('actions').description('the actions a policy may name: action, scope (resource|service), what it allows')).action((o: IamOpts) =>
    run(o, async (b) => printList(o, await b.actions(), (a) => [`${str(a.service)}/${str(a.alias)}`, a.scope === 0 ? 'service' : 'resource', a.name])),
  );
  leaf(iam.command('audits').description('the audit log, oldest first: time, action, resource, AccessKey, address, request id'))
    .option('--action <name>', 'only this action (CreateUser, ModifyPolicy, …)')
    .option('--resource <r>', 'only this resource (user/<alias>, group/<alias>, policy/<alias>, …)')
    .option('--limit <n>', 'at most n records (1–1000)', '100')
    .option('--marker <m>', 'read on from a previous page (printed on stderr when there is more)')
    .action((o: IamOpts & { action?: string; resource?: string; limit: string; marker?: string }) =>
      run(o, async (b) => {
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error('--limit must be an integer from 1 to 1000');
        if (o.marker !== undefined && !/^\d{1,15}$/.test(o.marker)) throw new Error('--marker must be one printed by a previous page');
        const page = await b.audits({ limit, ...(o.action ? { action: o.action } : {}), ...(o.resource ? { resource: o.resource } : {}), ...(o.marker ? { marker: o.marker } : {}) });
        if (o.json) out(JSON.stringify(page));
        else {
          for (const a of page.list) out([a.event_time, a.action, a.resource, a.access_key, a.source_ip, a.request_id].map(str).join('\t'));
          if (page.marker) process.stderr.write(`more: add --marker ${page.marker}\n`);
        }
      }),
    );
}
