/**
 * `yifangyun_preview` (docs/development/kodo-protocol.md §10.9): Kodo's document conversion — an Office
 * document (Word, PowerPoint, Excel, OpenDocument, WPS) to PDF. A persistent command only (Kodo runs it
 * asynchronously: conversions take seconds), with LibreOffice headless (soffice.ts) instead of Kodo's partner.
 *
 * Forms: `yifangyun_preview`, `yifangyun_preview/<ext>`, `yifangyun_preview/v2`, `yifangyun_preview/v2/ext=<ext>`.
 * The source's format comes from `<ext>` when given, else from the key's extension: doc, docx, odt, rtf, wps,
 * ppt, pptx, odp, dps, xls, xlsx, ods, csv, et (others → 400). Output: `application/pdf`.
 * Limits: GRANARY_DOC_MAX_SOURCE (400 above), GRANARY_JOB_TIMEOUT (soffice killed), the `video` pool
 * (GRANARY_VIDEO_CONCURRENCY subprocesses), GRANARY_MAX_OBJECT_SIZE for the PDF. 415 without LibreOffice.
 */
import { stat, symlink } from 'node:fs/promises';
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';
import { convertDocument } from './soffice.js';

/** The source formats Kodo's document conversion accepts. */
export const DOC_EXTENSIONS = ['doc', 'docx', 'odt', 'rtf', 'wps', 'ppt', 'pptx', 'odp', 'dps', 'xls', 'xlsx', 'ods', 'csv', 'et'] as const;

const NAME = 'yifangyun_preview';

const bad = (what: string): never => {
  throw Errors.badRequest(`${NAME}: ${what}`);
};

/** A checked extension (lower case) or 400. */
function checkExt(ext: string, from: string): string {
  const e = ext.toLowerCase().replace(/^\./, '');
  if (!(DOC_EXTENSIONS as readonly string[]).includes(e)) bad(`${from} ${JSON.stringify(ext)} is not a document format (${DOC_EXTENSIONS.join(', ')})`);
  return e;
}

export const yifangyunPreview: FopCommand<{ ext?: string }> = {
  name: NAME,
  pool: 'video',
  persistentOnly: true,
  parse(args) {
    let rest = args;
    if (rest[0] === 'v2') rest = rest.slice(1);
    if (rest.length === 0) return {};
    if (rest.length > 1) return bad('takes at most one format: yifangyun_preview[/v2][/ext=<ext>]');
    const v = rest[0]!;
    return { ext: checkExt(v.startsWith('ext=') ? v.slice(4) : v, 'format') };
  },
  async run(source, p, ctx) {
    const ext = p.ext ?? checkExt(/\.([^./]+)$/.exec(ctx.key)?.[1] ?? '', 'the key\'s extension');
    if (source.size > ctx.limits.docMaxSourceBytes) {
      throw Errors.badRequest(`${NAME}: the document is ${source.size} bytes, the limit is ${ctx.limits.docMaxSourceBytes} (GRANARY_DOC_MAX_SOURCE)`);
    }
    // LibreOffice picks its filter by extension: the stored bytes are linked under a name that has the right one.
    const input = ctx.tempFile(`.${ext}`);
    await symlink(await source.file(), input);
    const pdf = await convertDocument(NAME, input, 'pdf', ctx);
    return { file: pdf, size: (await stat(pdf)).size, contentType: 'application/pdf' };
  },
};
