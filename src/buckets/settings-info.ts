/**
 * The download settings of a bucket as `v2/bucketInfo` shows them (docs/development/kodo-protocol.md §8.6; field names from the Node
 * SDK's `GetBucketInfoV2Result`, meanings from Kodo's console, which reads `anti_leech_mode`, `refer_wl`, `refer_bl`
 * and `no_refer` from bucketInfo, and from a real bucketInfo answer, where `source_enabled` sits with the referer
 * fields and `max_age` is 0 until set):
 * - `max_age` seconds as set (0 = never set; a value ≤ 0 means the default when serving, buckets/max-age.ts);
 * - `protected` 1 when original protection is on;
 * - `anti_leech_mode` 0/1/2; `refer_wl` the rules of a white list, `refer_bl` of a black list, each left out when
 *   it is empty (Kodo's omitempty: with mode 0 neither is present; the Java SDK's test reads them as null);
 *   `no_refer` whether requests without a Referer pass; `source_enabled` whether the referer rules also apply to
 *   path-style URLs on Granary's own host (Kodo: "为源站开启"). It is NOT the mirror source: that is `source`/`host`.
 */
import type { BucketSettings } from '../ports/meta.js';

export interface DownloadSettingsInfo {
  protected: 0 | 1;
  max_age: number;
  anti_leech_mode: 0 | 1 | 2;
  refer_wl?: string[];
  refer_bl?: string[];
  no_refer: boolean;
  source_enabled: boolean;
}

/** The bucketInfo fields of a bucket's download settings. */
export function downloadSettingsInfo(s: BucketSettings): DownloadSettingsInfo {
  const r = s.referer;
  return {
    protected: s.protected === true ? 1 : 0,
    max_age: s.maxAge ?? 0,
    anti_leech_mode: r?.mode ?? 0,
    ...(r?.mode === 1 && r.patterns.length > 0 ? { refer_wl: r.patterns } : {}),
    ...(r?.mode === 2 && r.patterns.length > 0 ? { refer_bl: r.patterns } : {}),
    no_refer: r?.allowEmpty ?? false,
    source_enabled: r?.sourceEnabled ?? false,
  };
}
