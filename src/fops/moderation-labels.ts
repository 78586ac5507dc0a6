/**
 * From the nsfwjs classes to Kodo's nrop labels (docs/development/kodo-protocol.md §10.4): 0 pornographic (Porn + Hentai), 1 sexy
 * (Sexy), 2 normal (Neutral + Drawing). Pure; shared by the nrop command and the moderation worker.
 */
import type { NsfwPrediction } from './types.js';

/** Side of the square RGB input the model takes, pixels (MobileNetV2: 224 × 224 × 3). */
export const MODEL_INPUT_SIDE = 224;

/**
 * Below this probability of the chosen label, a verdict is marked `review: true` (the model is unsure; a person
 * should look). 0.6: with three labels, the winner then has less than a 3:2 margin over the rest together.
 */
export const NROP_REVIEW_THRESHOLD = 0.6;

/** Kodo's nrop labels. */
export type NropLabel = 0 | 1 | 2;

/** The verdict on one image. */
export interface NropVerdict {
  label: NropLabel;
  /** Probability of `label` (summed over its classes), 0..1, rounded to 6 decimals. */
  rate: number;
  /** `rate < NROP_REVIEW_THRESHOLD`. */
  review: boolean;
}

const LABEL_OF_CLASS: Record<NsfwPrediction['className'], NropLabel> = {
  Porn: 0,
  Hentai: 0,
  Sexy: 1,
  Neutral: 2,
  Drawing: 2,
};

/** The most probable label of `predictions` (ties go to the lower, stricter label). */
export function labelOf(predictions: NsfwPrediction[]): NropVerdict {
  const sums: [number, number, number] = [0, 0, 0];
  for (const p of predictions) sums[LABEL_OF_CLASS[p.className]] += p.probability;
  let label: NropLabel = 0;
  for (const l of [1, 2] as const) if (sums[l] > sums[label]) label = l;
  const rate = Math.min(1, Math.max(0, Math.round(sums[label] * 1e6) / 1e6));
  return { label, rate, review: rate < NROP_REVIEW_THRESHOLD };
}
