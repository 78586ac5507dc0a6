/**
 * `md2html[/<mode>][/css/<urlsafe b64 URL>]` (docs/development/kodo-protocol.md §10.9): the source object read
 * as Markdown (UTF-8, GitHub-flavoured, by `marked`) and answered as HTML, `text/html; charset=utf-8` — on
 * download URLs and as a persistent command.
 *
 * - mode 0 (Kodo's default): a whole document, `<!DOCTYPE html>` with `<head>` (charset, the key's base name as
 *   title, the stylesheet link) and `<body>`.
 * - mode 1: only the body's content (the stylesheet link, when given, first).
 * - css: an http(s) URL of a stylesheet, linked (never fetched by Granary).
 * The rendered HTML goes through `sanitize-html`: scripts, styles, iframes, forms, event handler attributes
 * (`onerror=` …) and `javascript:`/`data:` URLs are removed; the download route adds `Content-Security-Policy:
 * sandbox` to every HTML answer besides (roles/io/active-content.ts).
 * Rendering is synchronous (about 1.6 s per MiB on one core), hence its own small source limit. `marked` and
 * `sanitize-html` (with postcss) are loaded at the first render, not at every start of the server and the CLI.
 * Errors: 400 for bad parameters and for a source larger than GRANARY_MD2HTML_MAX_SOURCE (bytes).
 */
import type sanitizeHtmlType from 'sanitize-html';
import { urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';

export interface Md2htmlParams {
  /** 0 = a whole HTML document, 1 = the body's content only. */
  mode: 0 | 1;
  /** The stylesheet URL to link (http or https), if any. */
  css?: string;
}

const bad = (what: string): never => {
  throw Errors.badRequest(`md2html: ${what}`);
};

/** Parses `[<mode>][/css/<b64>]`; `mode/<n>` is accepted as a spelling of the positional mode. */
export function parseMd2html(args: string[]): Md2htmlParams {
  const rest = [...args];
  let mode: 0 | 1 = 0;
  const modeOf = (v: string | undefined): 0 | 1 => (v === '0' || v === '1' ? (Number(v) as 0 | 1) : bad(`mode must be 0 or 1, got ${JSON.stringify(v ?? '')}`));
  if (rest[0] !== undefined && rest[0] !== 'css' && rest[0] !== 'mode') mode = modeOf(rest.shift());
  let css: string | undefined;
  const seen = new Set<string>();
  while (rest.length > 0) {
    const k = rest.shift()!;
    const v = rest.shift();
    if (seen.has(k)) bad(`${k} given twice`);
    seen.add(k);
    if (k === 'mode') mode = modeOf(v);
    else if (k === 'css') {
      if (v === undefined || v === '') bad('css needs a URL-safe base64 URL');
      let text = '';
      try {
        text = urlsafeB64DecodeText(v!);
      } catch {
        bad('css is not URL-safe base64');
      }
      let url: URL | undefined;
      try {
        url = new URL(text);
      } catch {
        bad('css is not a URL');
      }
      if (url!.protocol !== 'http:' && url!.protocol !== 'https:') bad('css must be an http or https URL');
      css = url!.href;
    } else bad(`unknown parameter ${JSON.stringify(k)}`);
  }
  return css === undefined ? { mode } : { mode, css };
}

/** What the sanitizer keeps: sanitize-html's defaults plus images, strike-through, table alignment and code classes. */
const sanitizeOptions = (defaultTags: readonly string[]): sanitizeHtmlType.IOptions => ({
  allowedTags: [...defaultTags, 'img', 'del', 'input'],
  allowedAttributes: {
    a: ['href', 'name', 'title'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    code: ['class'],
    th: ['align'],
    td: ['align'],
    ol: ['start'],
    input: ['type', 'checked', 'disabled'],
    '*': ['id'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'tel'],
  allowProtocolRelative: true,
  // GFM task-list checkboxes only: any other input is dropped.
  exclusiveFilter: (frame) => frame.tag === 'input' && frame.attribs.type !== 'checkbox',
});

/** The renderer (marked, then sanitize-html), loaded once, at the first render. */
let renderer: Promise<(markdown: string) => string> | undefined;
function loadRenderer(): Promise<(markdown: string) => string> {
  renderer ??= Promise.all([import('marked'), import('sanitize-html')]).then(([{ Marked }, { default: sanitizeHtml }]) => {
    const options = sanitizeOptions(sanitizeHtml.defaults.allowedTags);
    return (markdown: string) => sanitizeHtml(new Marked({ gfm: true, async: false }).parse(markdown) as string, options);
  });
  return renderer;
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Markdown text → sanitised HTML: the whole document (mode 0) or the body's content (mode 1). */
export async function renderMarkdown(markdown: string, params: Md2htmlParams, title: string): Promise<string> {
  const body = (await loadRenderer())(markdown);
  const link = params.css ? `<link rel="stylesheet" href="${escapeHtml(params.css)}">\n` : '';
  if (params.mode === 1) return link + body;
  return `<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>${escapeHtml(title)}</title>\n${link}</head>\n<body>\n${body}</body>\n</html>\n`;
}

export const md2html: FopCommand<Md2htmlParams> = {
  name: 'md2html',
  parse: parseMd2html,
  async run(source, params, ctx) {
    if (source.size > ctx.limits.md2htmlMaxSourceBytes) {
      throw Errors.badRequest(`md2html: the source (${source.size} bytes) is larger than GRANARY_MD2HTML_MAX_SOURCE (${ctx.limits.md2htmlMaxSourceBytes} bytes)`);
    }
    const markdown = new TextDecoder('utf-8', { ignoreBOM: false }).decode(await source.bytes());
    const title = ctx.key.split('/').pop() || ctx.key;
    return { body: Buffer.from(await renderMarkdown(markdown, params, title), 'utf8'), contentType: 'text/html; charset=utf-8' };
  },
};
