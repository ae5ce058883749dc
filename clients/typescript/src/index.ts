export { Callgate, type CallgateOptions, type CallRecording, type WithResponse } from './client.js';
export * from './errors.js';
export type { FetchLike, RequestOptions, ResponseInfo } from './http.js';
export { PageIterator, type Page } from './pagination.js';
export type * from './types.js';
export { verify as verifyWebhook, webhooks, type WebhookHeaders } from './webhooks.js';
