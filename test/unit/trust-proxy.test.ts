/**
 * GRANARY_TRUST_PROXY (src/trust-proxy.ts, read by loadConfig): false by default, true, or a validated list of
 * addresses, CIDR blocks and proxy-addr's names; anything else is refused naming the variable.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { parseTrustProxy } from '../../src/trust-proxy.js';

describe('GRANARY_TRUST_PROXY', () => {
  it('is off unless set; true/false; a list of addresses, CIDR blocks and names', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('TRUE')).toBe(true);
    expect(parseTrustProxy(' 10.0.0.1, 192.168.0.0/16 ,::1, fd00::/8, loopback ')).toEqual(['10.0.0.1', '192.168.0.0/16', '::1', 'fd00::/8', 'loopback']);
    expect(loadConfig({ GRANARY_TRUST_PROXY: 'uniquelocal' }).trustProxy).toEqual(['uniquelocal']);
  });

  it('refuses what is not an address, a block or a known name', () => {
    for (const bad of ['proxy.example', '10.0.0.0/33', '::1/129', '10.0.0.1/8/1', '1', 'yes', '10.0.0.0/']) {
      expect(() => parseTrustProxy(bad), bad).toThrow(/GRANARY_TRUST_PROXY/);
    }
  });
});
