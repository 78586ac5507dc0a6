// English and Simplified Chinese. Texts are written in English in the code (`t('Sign in')`); ZH maps them to
// Chinese. The language follows the browser (navigator.languages) until the user picks one with the switch,
// which is remembered in localStorage. A missing translation shows the English text.
import { createContext, useContext, useState, type ReactNode } from 'react';
import { ZH } from './zh';

export type Lang = 'en' | 'zh';

const STORAGE_KEY = 'granary-console-lang';

function initialLang(): Lang {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved === 'en' || saved === 'zh') return saved;
  const langs = navigator.languages?.length ? navigator.languages : [navigator.language];
  for (const l of langs) {
    const lower = l.toLowerCase();
    if (lower.startsWith('zh')) return 'zh';
    if (lower.startsWith('en')) return 'en';
  }
  return 'en';
}

interface I18n {
  lang: Lang;
  setLang(l: Lang): void;
  /** The text in the current language; `{name}` placeholders filled from `vars`. */
  t(text: string, vars?: Record<string, string | number>): string;
  /** A date and time (Date, Unix ms or an ISO string) in the locale: the browser's, or zh-CN with the Chinese texts. */
  date(value: Date | number | string, style?: 'datetime' | 'date' | 'time'): string;
}

/** The locale dates are written in: zh-CN with the Chinese texts, else the browser's own (its first language). */
export function dateLocale(lang: Lang): string | undefined {
  if (lang === 'zh') return 'zh-CN';
  const first = navigator.languages?.[0] ?? navigator.language;
  return first && !first.toLowerCase().startsWith('zh') ? first : undefined;
}

const STYLES: Record<'datetime' | 'date' | 'time', Intl.DateTimeFormatOptions> = {
  datetime: { dateStyle: 'medium', timeStyle: 'short' },
  date: { dateStyle: 'medium' },
  time: { timeStyle: 'short' },
};

function formatDate(lang: Lang, value: Date | number | string, style: 'datetime' | 'date' | 'time' = 'datetime'): string {
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return new Intl.DateTimeFormat(dateLocale(lang), STYLES[style]).format(d);
}

const Ctx = createContext<I18n>({ lang: 'en', setLang: () => undefined, t: (s) => s, date: (v, style) => formatDate('en', v, style) });

export function I18nProvider({ children }: { children: ReactNode }) {
  const [lang, setLangState] = useState<Lang>(initialLang);
  const setLang = (l: Lang): void => {
    localStorage.setItem(STORAGE_KEY, l);
    document.documentElement.lang = l === 'zh' ? 'zh-CN' : 'en';
    setLangState(l);
  };
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  const t = (text: string, vars?: Record<string, string | number>): string => {
    let out = lang === 'zh' ? (ZH[text] ?? text) : text;
    if (vars) for (const [k, v] of Object.entries(vars)) out = out.split(`{${k}}`).join(String(v));
    return out;
  };
  const date = (value: Date | number | string, style?: 'datetime' | 'date' | 'time'): string => formatDate(lang, value, style);
  return <Ctx.Provider value={{ lang, setLang, t, date }}>{children}</Ctx.Provider>;
}

export const useI18n = (): I18n => useContext(Ctx);
