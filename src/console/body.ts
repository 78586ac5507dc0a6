/**
 * Reading the JSON bodies of console API calls: each helper names the field in its 400 (`badRequest`), so the
 * page can show what was wrong. A missing body reads as `{}`.
 */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';

export type Body = Record<string, unknown>;

/** The request's JSON object body (`{}` when absent); 400 when it is not an object. */
export function bodyOf(request: FastifyRequest): Body {
  const b = request.body;
  if (b === undefined || b === null) return {};
  if (typeof b !== 'object' || Array.isArray(b)) throw Errors.badRequest('the body must be a JSON object');
  return b as Body;
}

/** A required non-empty string field. */
export function text(b: Body, name: string): string {
  const v = b[name];
  if (typeof v !== 'string' || v === '') throw Errors.badRequest(`${name} is required`);
  return v;
}

/** An optional string field ('' when absent). */
export function optText(b: Body, name: string): string {
  const v = b[name];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw Errors.badRequest(`${name} must be a string`);
  return v;
}

/** A required integer field (a JSON number or a decimal string) within [min, max]. */
export function int(b: Body, name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  const v = b[name];
  const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v.trim()) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw Errors.badRequest(`${name} must be an integer between ${min} and ${max}`);
  }
  return n;
}

/** A required boolean field. */
export function flag(b: Body, name: string): boolean {
  const v = b[name];
  if (typeof v !== 'boolean') throw Errors.badRequest(`${name} must be true or false`);
  return v;
}

/** An optional string → string map field (`{}` when absent). */
export function textMap(b: Body, name: string): Record<string, string> {
  const v = b[name];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw Errors.badRequest(`${name} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') throw Errors.badRequest(`${name}.${k} must be a string`);
    out[k] = x;
  }
  return out;
}

/** A path parameter (fastify decodes it), 400 when empty. */
export function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

/** A query parameter ('' when absent). */
export function queryParam(request: FastifyRequest, name: string): string {
  const v = (request.query as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : '';
}
