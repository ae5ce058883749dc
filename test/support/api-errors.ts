/** Checks of the API's answers that many test files make. */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';

/** The common shape of every error: code, message, a request id that is also the X-Request-Id header. */
export function assertErrorShape(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body.slice(0, 300)}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json() as Record<string, unknown>;
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  assert.ok((body.message as string).length > 0);
  assert.match(String(body.request_id), /^req_[0-9a-z]+$/);
  assert.equal(res.headers['x-request-id'], body.request_id);
  return body;
}

/** Bytes of the JSON the service measures: the value serialised without white space. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
