/**
 * The S3 region name of Granary's region (docs/development/kodo-protocol.md §18.2): Kodo serves S3 at
 * `s3.<region>.qiniucs.com`, where the region names differ from Kodo's region ids (z0 → cn-east-1, …). SigV4
 * signatures carry the region the client was configured with; the S3 listener accepts its own region name and also
 * `us-east-1`, the default of most AWS tools and SDKs when no region is set.
 */

/** Kodo region id → the S3 region name Kodo's S3 endpoints use. */
const S3_REGION_OF: Readonly<Record<string, string>> = {
  z0: 'cn-east-1',
  'cn-east-2': 'cn-east-2',
  z1: 'cn-north-1',
  z2: 'cn-south-1',
  na0: 'us-north-1',
  as0: 'ap-southeast-1',
  'ap-southeast-2': 'ap-southeast-2',
  'ap-southeast-3': 'ap-southeast-3',
};

/** The region AWS tools sign with when none is configured. */
export const DEFAULT_AWS_REGION = 'us-east-1';

/** The S3 region name of the Kodo region id `region` (an unknown id is its own S3 name). */
export function s3RegionOf(region: string): string {
  return S3_REGION_OF[region] ?? region;
}

/** Whether a SigV4 credential scope's region is accepted by a server in Kodo region `region`. */
export function acceptsSigningRegion(region: string, signed: string): boolean {
  return signed === s3RegionOf(region) || signed === DEFAULT_AWS_REGION || signed === region;
}

/**
 * Whether a CreateBucket `LocationConstraint` names this server's region: its S3 name, its Kodo id, or
 * empty/`us-east-1` (S3's way of saying "the default region").
 */
export function acceptsLocation(region: string, location: string): boolean {
  return location === '' || acceptsSigningRegion(region, location);
}
