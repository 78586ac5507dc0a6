import { useState, type FormEvent, type ReactNode } from 'react';
import { signIn, type Session } from '../api';
import { useI18n } from '../i18n';

export function SignIn({ onSignedIn, langSwitch }: { onSignedIn: (s: Session) => void; langSwitch: ReactNode }) {
  const { t } = useI18n();
  const [accessKey, setAccessKey] = useState('');
  const [secretKey, setSecretKey] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const s = await signIn(accessKey.trim(), secretKey.trim());
      setSecretKey('');
      onSignedIn(s);
    } catch (err) {
      setError(t('Sign-in failed: {why}', { why: (err as Error).message }));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="signin">
      <form onSubmit={(e) => void submit(e)} className="card">
        <div className="row between">
          <h1>Granary</h1>
          {langSwitch}
        </div>
        <p className="muted">{t('Sign in with an AccessKey and SecretKey (the root pair or an account pair).')}</p>
        <label>
          AccessKey
          <input name="accessKey" autoComplete="username" value={accessKey} onChange={(e) => setAccessKey(e.target.value)} required />
        </label>
        <label>
          SecretKey
          <input name="secretKey" type="password" autoComplete="current-password" value={secretKey} onChange={(e) => setSecretKey(e.target.value)} required />
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          {t('Sign in')}
        </button>
        <p className="muted small">{t('The secret is checked by the server and never kept in the browser.')}</p>
      </form>
    </div>
  );
}
