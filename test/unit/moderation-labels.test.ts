/** Kodo nrop labels from nsfwjs classes (fops/moderation-labels.ts, docs/development/kodo-protocol.md §10.4). */
import { describe, expect, it } from 'vitest';
import { labelOf, NROP_REVIEW_THRESHOLD } from '../../src/fops/moderation-labels.js';
import type { NsfwPrediction } from '../../src/fops/types.js';

const p = (probs: Partial<Record<NsfwPrediction['className'], number>>): NsfwPrediction[] =>
  (Object.entries(probs) as [NsfwPrediction['className'], number][]).map(([className, probability]) => ({ className, probability }));

describe('labelOf', () => {
  it('sums Porn and Hentai into 0, Neutral and Drawing into 2', () => {
    expect(labelOf(p({ Neutral: 0.3, Drawing: 0.1, Porn: 0.35, Hentai: 0.25 }))).toEqual({ label: 0, rate: 0.6, review: false });
    expect(labelOf(p({ Neutral: 0.35, Drawing: 0.35, Porn: 0.3 }))).toEqual({ label: 2, rate: 0.7, review: false });
    expect(labelOf(p({ Sexy: 0.9, Neutral: 0.1 }))).toEqual({ label: 1, rate: 0.9, review: false });
  });

  it(`marks verdicts under ${NROP_REVIEW_THRESHOLD} for review, and breaks ties towards the stricter label`, () => {
    expect(labelOf(p({ Sexy: 0.45, Neutral: 0.35, Porn: 0.2 }))).toEqual({ label: 1, rate: 0.45, review: true });
    expect(labelOf(p({ Sexy: 0.5, Neutral: 0.5 })).label).toBe(1);
  });
});
