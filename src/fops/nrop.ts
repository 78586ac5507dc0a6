/**
 * `nrop` (docs/development/kodo-protocol.md §10.4, Kodo's legacy content moderation) on the nsfwjs MobileNetV2 model. Answers
 * `{"code":0,"message":"success","nonce":"<random hex>","timestamp":<Unix seconds>,"fileList":[{"rate","label",
 * "name","review"}],"statistic":[n0,n1,n2],"reviewCount":n}` for the one source image (`name` its key).
 *
 * Labels: 0 pornographic (Porn + Hentai), 1 sexy (Sexy), 2 normal (Neutral + Drawing); `rate` the summed
 * probability of the chosen label (0..1); `review` true when that rate is below `NROP_REVIEW_THRESHOLD`.
 *
 * 403 (`Errors.nropDisabled`) unless the bucket has nrop enabled (`POST /nrop/<bucket>/enable/1` or
 * `granary bucket nrop <bucket> on`); 415/400 for sources that are not decodable images (checked before the
 * model is involved); 599 when the model fails. Runs in the `model` pool: the resize here (sharp, off the event
 * loop in libvips' threads), the inference in the moderation worker (fops/moderation-model.ts).
 */
import { randomBytes } from 'node:crypto';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import { loadImage, openImage, vips } from './image-source.js';
import { labelOf, MODEL_INPUT_SIDE } from './moderation-labels.js';
import type { FopCommand } from './types.js';

export const nrop: FopCommand<Record<string, never>> = {
  name: 'nrop',
  pool: 'model',
  parse(args) {
    if (args.length > 0) throw Errors.badRequest('nrop: takes no parameters');
    return {};
  },
  async run(source, _params, ctx) {
    const { bucket, limits } = ctx;
    if (bucket.nrop !== true) {
      throw Errors.nropDisabled(
        `nrop is not enabled for bucket ${bucket.name}; enable it with POST /nrop/${bucket.name}/enable/1 or \`granary bucket nrop ${bucket.name} on\``,
      );
    }
    if (!ctx.moderation) throw Errors.modelFailed('no moderation model in this process');
    const { input, meta } = await loadImage('nrop', source, ctx);
    const side = MODEL_INPUT_SIDE;
    const pixels = await vips('nrop', () =>
      openImage('nrop', input, meta, limits)
        .rotate()
        .resize(side, side, { fit: 'fill' })
        .removeAlpha()
        .toColourspace('srgb')
        .raw()
        .toBuffer(),
    );
    if (pixels.length !== side * side * 3) throw Errors.fopFailed(`nrop: unexpected pixel layout (${pixels.length} bytes)`);
    const verdict = labelOf(await ctx.moderation.classify(pixels, ctx.signal));
    const statistic = [0, 0, 0];
    statistic[verdict.label] = 1;
    return {
      json: {
        code: 0,
        message: 'success',
        nonce: randomBytes(8).toString('hex'),
        timestamp: nowSeconds(ctx.clock),
        fileList: [{ rate: verdict.rate, label: verdict.label, name: ctx.key, review: verdict.review }],
        statistic,
        reviewCount: verdict.review ? 1 : 0,
      },
    };
  },
};
