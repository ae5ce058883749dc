/**
 * One request to callgate through n8n's own HTTP helper, authenticated with the `callgateApi` credentials
 * (their `authenticate` adds `Authorization: Bearer <key>`). Every answer comes back with its status, so the
 * callers decide what a 404 means (gone, for the trigger) and every other refusal becomes one readable error
 * naming callgate's code, message, `param` and request id.
 */
import type {
  IExecuteFunctions,
  IHookFunctions,
  IHttpRequestOptions,
  ILoadOptionsFunctions,
  IN8nHttpFullResponse,
  IWebhookFunctions,
  JsonObject,
} from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

export const CREDENTIALS_TYPE = 'callgateApi';

export type CallgateContext = IExecuteFunctions | IHookFunctions | ILoadOptionsFunctions | IWebhookFunctions;

export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The path under the base URL, e.g. `/v1/calls`. */
  readonly path: string;
  readonly qs?: Record<string, string | number>;
  readonly body?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
}

export interface ApiAnswer {
  readonly statusCode: number;
  readonly body: unknown;
}

/** The base URL of the credentials without a trailing slash. */
export function baseUrlOf(credentials: Record<string, unknown>): string {
  const raw = typeof credentials.baseUrl === 'string' ? credentials.baseUrl.trim() : '';
  if (raw === '') throw new Error('The Callgate API credentials have no base URL.');
  return raw.replace(/\/+$/, '');
}

/** A body as n8n's helper may hand it over (parsed, text or bytes), parsed when it is JSON. */
export function parseBody(body: unknown): unknown {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : body;
  if (typeof text !== 'string') return body;
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The options for `httpRequestWithAuthentication`: JSON both ways, and every status answered, not thrown. */
export function httpOptions(baseUrl: string, request: ApiRequest): IHttpRequestOptions {
  const options: IHttpRequestOptions = {
    method: request.method,
    baseURL: baseUrl,
    url: request.path,
    json: true,
    returnFullResponse: true,
    ignoreHttpStatusErrors: true,
    headers: { Accept: 'application/json', ...request.headers },
  };
  if (request.qs) options.qs = request.qs;
  if (request.body) options.body = request.body as IHttpRequestOptions['body'];
  return options;
}

/** The text of a refusal: `callgate answered 400 invalid_request: <message> (param: to; request req_…)`. */
export function describeRefusal(answer: ApiAnswer): string {
  const body = answer.body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const error = body as Record<string, unknown>;
    const details = [
      typeof error.param === 'string' ? `param: ${error.param}` : undefined,
      typeof error.request_id === 'string' ? `request ${error.request_id}` : undefined,
    ].filter((detail) => detail !== undefined);
    const code = typeof error.error === 'string' ? ` ${error.error}` : '';
    const message = typeof error.message === 'string' ? `: ${error.message}` : '';
    return `callgate answered ${answer.statusCode}${code}${message}${details.length > 0 ? ` (${details.join('; ')})` : ''}`;
  }
  const text = typeof body === 'string' && body !== '' ? `: ${body.slice(0, 200)}` : '';
  return `callgate answered ${answer.statusCode}${text}`;
}

export function isSuccess(answer: ApiAnswer): boolean {
  return answer.statusCode >= 200 && answer.statusCode < 300;
}

/** Sends the request and answers its status and parsed body, whatever the status. */
export async function callgateRequest(context: CallgateContext, request: ApiRequest): Promise<ApiAnswer> {
  const credentials = await context.getCredentials(CREDENTIALS_TYPE);
  const options = httpOptions(baseUrlOf(credentials), request);
  const response = (await context.helpers.httpRequestWithAuthentication.call(context, CREDENTIALS_TYPE, options)) as IN8nHttpFullResponse;
  return { statusCode: response.statusCode, body: parseBody(response.body) };
}

/** The error n8n shows for a refusal, with callgate's own message. */
export function refusalError(context: CallgateContext, answer: ApiAnswer, itemIndex?: number): NodeApiError {
  const body = typeof answer.body === 'object' && answer.body !== null ? (answer.body as JsonObject) : { body: String(answer.body) };
  return new NodeApiError(context.getNode(), body, {
    message: describeRefusal(answer),
    httpCode: String(answer.statusCode),
    ...(itemIndex === undefined ? {} : { itemIndex }),
  });
}

/** Sends the request and answers the body of a 2xx; any other status throws `refusalError`. */
export async function callgateJson(context: CallgateContext, request: ApiRequest, itemIndex?: number): Promise<unknown> {
  const answer = await callgateRequest(context, request);
  if (!isSuccess(answer)) throw refusalError(context, answer, itemIndex);
  return answer.body;
}
