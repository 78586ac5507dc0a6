// A button copying `text` to the clipboard (navigator.clipboard; on a plain-http page that has none, a selected
// hidden textarea and document.execCommand('copy')), saying "Copied" for two seconds.
import { useState } from 'react';
import { useI18n } from './i18n';

async function copy(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('copy refused');
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const { t } = useI18n();
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <button
      type="button"
      className="copy"
      data-testid="copy"
      aria-label={label}
      title={label}
      onClick={() => {
        copy(text).then(
          () => setState('copied'),
          () => setState('failed'),
        );
        setTimeout(() => setState('idle'), 2000);
      }}
    >
      {state === 'copied' ? t('Copied') : state === 'failed' ? t('Select and copy it') : t('Copy')}
    </button>
  );
}
