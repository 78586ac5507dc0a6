// The console's shell: sign-in gate, top bar (screens, language switch, sign-out) and hash routes:
// #/overview, #/buckets, #/buckets/<bucket> (settings), #/files/<bucket>?prefix=…, #/processing, #/iam/…, #/keys.
import { useEffect, useState } from 'react';
import { currentSession, signOut, whenSignedOut, type Session } from './api';
import { useI18n } from './i18n';
import { BucketSettings } from './screens/BucketSettings';
import { Buckets } from './screens/Buckets';
import { Files } from './screens/Files';
import { Iam } from './screens/Iam';
import { Keys } from './screens/Keys';
import { Overview } from './screens/Overview';
import { Processing } from './screens/Processing';
import { SignIn } from './screens/SignIn';

export interface Route {
  screen: string;
  arg: string;
  query: URLSearchParams;
}

function parseHash(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const q = hash.indexOf('?');
  const path = q >= 0 ? hash.slice(0, q) : hash;
  const [screen = 'overview', ...rest] = path.split('/');
  return { screen: screen || 'overview', arg: decodeURIComponent(rest.join('/')), query: new URLSearchParams(q >= 0 ? hash.slice(q + 1) : '') };
}

/** Goes to a screen: `go('files', bucket, {prefix})`. */
export function go(screen: string, arg = '', query: Record<string, string> = {}): void {
  const qs = new URLSearchParams(query).toString();
  location.hash = `#/${screen}${arg ? `/${encodeURIComponent(arg)}` : ''}${qs ? `?${qs}` : ''}`;
}

export function App() {
  const { t, lang, setLang } = useI18n();
  const [session, setSession] = useState<Session | undefined | null>(null);
  const [route, setRoute] = useState<Route>(parseHash);

  useEffect(() => {
    void currentSession().then(setSession);
    whenSignedOut(() => setSession(undefined));
    const onHash = (): void => setRoute(parseHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const langSwitch = (
    <select className="lang" aria-label={t('Language')} value={lang} onChange={(e) => setLang(e.target.value as 'en' | 'zh')}>
      <option value="en">English</option>
      <option value="zh">简体中文</option>
    </select>
  );

  if (session === null) return <div className="loading">…</div>;
  if (session === undefined) return <SignIn onSignedIn={setSession} langSwitch={langSwitch} />;

  const screens: Array<[string, string]> = [
    ['overview', t('Overview')],
    ['buckets', t('Buckets')],
    ['files', t('Files')],
    ['processing', t('Processing')],
    ['iam', t('IAM')],
    ...(session.root ? ([['keys', t('Keys')]] as Array<[string, string]>) : []),
  ];

  let body;
  switch (route.screen) {
    case 'buckets':
      body = route.arg ? <BucketSettings bucket={route.arg} /> : <Buckets />;
      break;
    case 'files':
      body = <Files bucket={route.arg} prefix={route.query.get('prefix') ?? ''} />;
      break;
    case 'processing':
      body = <Processing session={session} />;
      break;
    case 'iam':
      body = <Iam session={session} arg={route.arg} query={route.query} />;
      break;
    case 'keys':
      body = session.root ? <Keys /> : <Overview />;
      break;
    default:
      body = <Overview />;
  }

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Granary</span>
        <nav>
          {screens.map(([id, label]) => (
            <a key={id} href={`#/${id}`} className={route.screen === id || (id === 'overview' && !screens.some(([s]) => s === route.screen)) ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
        <span className="spacer" />
        {langSwitch}
        <span className="who" title={session.accessKey}>
          {session.root ? t('root') : t('account')} {session.accessKey.slice(0, 8)}…
        </span>
        <button
          className="link"
          onClick={() => {
            void signOut().finally(() => setSession(undefined));
          }}
        >
          {t('Sign out')}
        </button>
      </header>
      <main>{body}</main>
    </div>
  );
}
