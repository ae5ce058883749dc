/** Small readers and writers of the suppressions API for the tests, through the real app (inject). */
import type { LightMyRequestResponse } from 'fastify';
import { postApi } from './batch-client.js';
import type { TestApp } from './test-app.js';

export function postSuppression(
  t: TestApp,
  body: unknown,
  options: { token?: string; idempotencyKey?: string } = {},
): Promise<LightMyRequestResponse> {
  return postApi(t, '/v1/suppressions', body, options);
}

export function deleteSuppression(t: TestApp, to: string, token = t.seed.token): Promise<LightMyRequestResponse> {
  return t.inject({ method: 'DELETE', url: `/v1/suppressions/${encodeURIComponent(to)}`, headers: { authorization: `Bearer ${token}` } });
}

export function getSuppressions(t: TestApp, query = '', token = t.seed.token): Promise<LightMyRequestResponse> {
  return t.inject({ method: 'GET', url: `/v1/suppressions${query}`, headers: { authorization: `Bearer ${token}` } });
}
