/**
 * The Callgate node's request building, as pure functions: the per-item Idempotency-Key (the same for the
 * same execution, node and item; a user key wins), the JSON fields' errors, list filters and paging, batch
 * bodies, and the trigger's endpoint decisions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  callFilters,
  collectPages,
  createBatchRequest,
  createCallRequest,
  idempotencyKeyFor,
  type ItemIdentity,
  itemIdempotencyKey,
  parseMetadata,
  parseRecipients,
  recipientsFromFields,
  scheduledTime,
} from '../nodes/Callgate/requests.js';
import { chosenEvents, endpointServes } from '../nodes/CallgateTrigger/endpoints.js';
import type { ApiRequest } from '../shared/transport.js';
import { describeRefusal } from '../shared/transport.js';

const item = (overrides: Partial<ItemIdentity> = {}): ItemIdentity => ({
  instanceId: 'instance-1',
  workflowId: 'wf-7',
  executionId: '1042',
  nodeName: 'Call the customer',
  itemIndex: 0,
  ...overrides,
});

describe('n8n node: Idempotency-Key per item', () => {
  it('is the same for the same execution, node and item, and printable ASCII within 255 characters', () => {
    const key = itemIdempotencyKey(item());
    assert.equal(itemIdempotencyKey(item()), key, 'Retry On Fail sends the same key');
    assert.match(key, /^[!-~]{1,255}$/);
  });

  it('differs for another item, execution, node, workflow or n8n instance', () => {
    const keys = [
      item(),
      item({ itemIndex: 1 }),
      item({ executionId: '1043' }),
      item({ nodeName: 'Call the customer again' }),
      item({ workflowId: 'wf-8' }),
      item({ instanceId: 'instance-2' }),
    ].map(itemIdempotencyKey);
    assert.equal(new Set(keys).size, keys.length);
  });

  it('is random without an execution id, never one that another run could share', () => {
    assert.notEqual(itemIdempotencyKey(item({ executionId: '' })), itemIdempotencyKey(item({ executionId: '' })));
  });

  it("a user's key wins, trimmed; a key callgate would refuse is a clear error before any request", () => {
    assert.equal(idempotencyKeyFor('  order-881 ', item()), 'order-881');
    assert.equal(idempotencyKeyFor(881, item()), '881');
    assert.equal(idempotencyKeyFor('', item()), itemIdempotencyKey(item()));
    assert.equal(idempotencyKeyFor(undefined, item()), itemIdempotencyKey(item()));
    assert.throws(() => idempotencyKeyFor('order 881', item()), /printable ASCII characters without spaces/);
    assert.throws(() => idempotencyKeyFor('x'.repeat(256), item()), /1 to 255/);
  });

  it('create sends the body callgate takes and the key as a header', () => {
    const request = createCallRequest(
      { agentId: 'agent_a', to: ' +14155550123 ', metadata: '{"customer_name": "Ada"}', idempotencyKey: '' },
      item({ itemIndex: 2 }),
    );
    assert.deepEqual(request, {
      method: 'POST',
      path: '/v1/calls',
      body: { agent_id: 'agent_a', to: '+14155550123', metadata: { customer_name: 'Ada' } },
      headers: { 'Idempotency-Key': itemIdempotencyKey(item({ itemIndex: 2 })) },
    });
    const withUserKey = createCallRequest({ agentId: 'agent_a', to: '+14155550123', idempotencyKey: 'crm-42' }, item());
    assert.deepEqual(withUserKey.headers, { 'Idempotency-Key': 'crm-42' });
    assert.equal('metadata' in (withUserKey.body ?? {}), false);
    assert.throws(() => createCallRequest({ agentId: '', to: '+14155550123' }, item()), /Agent is required/);
    assert.throws(() => createCallRequest({ agentId: 'agent_a', to: '' }, item()), /To is required/);
  });
});

describe('n8n node: JSON fields', () => {
  it('metadata: an object, parsed from text or as n8n already parsed it; empty is left out', () => {
    assert.deepEqual(parseMetadata('{"a": 1}'), { a: 1 });
    assert.deepEqual(parseMetadata({ a: 1 }), { a: 1 });
    assert.equal(parseMetadata(''), undefined);
    assert.equal(parseMetadata('  '), undefined);
    assert.equal(parseMetadata('{}'), undefined);
    assert.equal(parseMetadata(undefined), undefined);
  });

  it('metadata that is not JSON, or not an object, says so with an example', () => {
    assert.throws(
      () => parseMetadata('{customer_name: "Ada"}'),
      (error: Error) => {
        assert.match(error.message, /^Metadata is not valid JSON \(/);
        assert.match(error.message, /Write it like \{"customer_name": "Ada"\}/);
        return true;
      },
    );
    assert.throws(() => parseMetadata('[1, 2]'), /Metadata must be a JSON object .*not an array/);
    assert.throws(() => parseMetadata('"Ada"'), /Metadata must be a JSON object .*not "Ada"/);
    assert.throws(
      () => createCallRequest({ agentId: 'agent_a', to: '+14155550123', metadata: '{"a":' }, item()),
      /Metadata is not valid JSON/,
    );
  });

  it('recipients: a JSON array of objects, or the fields, each checked with its place', () => {
    assert.deepEqual(parseRecipients('[{"to": "+14155550123"}]'), [{ to: '+14155550123' }]);
    assert.throws(() => parseRecipients('[]'), /at least one/);
    assert.throws(() => parseRecipients('{"to": "+1"}'), /must be a JSON array/);
    assert.throws(() => parseRecipients('[{"to": "+14155550123"}, 5]'), /Recipients\[1\] must be an object/);
    assert.throws(() => parseRecipients('[{"to": '), /Recipients is not valid JSON/);
    assert.deepEqual(
      recipientsFromFields([
        { to: '+14155550123', reference: 'appt-1', metadata: '{"customer_name": "Ada"}' },
        { to: '+14155550124', reference: '', metadata: '{}' },
      ]),
      [{ to: '+14155550123', reference: 'appt-1', metadata: { customer_name: 'Ada' } }, { to: '+14155550124' }],
    );
    assert.throws(() => recipientsFromFields([{ to: '+14155550123' }, { to: ' ' }]), /Recipient 2: To is required/);
    assert.throws(() => recipientsFromFields([{ to: '+14155550123', metadata: 'x' }]), /Recipient 1: Metadata is not valid JSON/);
  });

  it('batch create: the options as callgate names them, only those set', () => {
    const request = createBatchRequest(
      {
        agentId: 'agent_a',
        recipients: [{ to: '+14155550123' }],
        options: {
          name: ' Reminders ',
          scheduledAt: '2026-11-24T09:00:00Z',
          maxConcurrency: 10,
          callingWindow: { start: '08:00', end: '21:00', days: ['mon'], timeZone: 'recipient', fallbackTimeZone: 'America/New_York' },
          retry: { on: ['busy'], maxAttempts: 3, delayMinutes: 30 },
        },
      },
      item(),
    );
    assert.deepEqual(request.body, {
      agent_id: 'agent_a',
      recipients: [{ to: '+14155550123' }],
      name: 'Reminders',
      scheduled_at: '2026-11-24T09:00:00Z',
      max_concurrency: 10,
      calling_window: { start: '08:00', end: '21:00', days: ['mon'], time_zone: 'recipient', fallback_time_zone: 'America/New_York' },
      retry: { on: ['busy'], max_attempts: 3, delay_minutes: 30 },
    });
    assert.deepEqual(request.headers, { 'Idempotency-Key': itemIdempotencyKey(item()) });
    const bare = createBatchRequest({ agentId: 'agent_a', recipients: [{ to: '+14155550123' }], options: {} }, item());
    assert.deepEqual(Object.keys(bare.body ?? {}), ['agent_id', 'recipients']);
    assert.equal(scheduledTime('2026-11-24T09:00:00+01:00'), '2026-11-24T09:00:00+01:00');
    assert.match(scheduledTime('2026-11-24T09:00:00'), /^2026-11-2\dT\d\d:00:00\.000Z$/);
    assert.throws(() => scheduledTime('tomorrow'), /Scheduled At is not a date/);
  });
});

describe('n8n node: lists and paging', () => {
  it('filters map to the query parameters; empty ones are left out', () => {
    assert.deepEqual(callFilters({ status: 'failed', to: '+14155550123', batchId: 'batch_1', reference: '', agentId: ' agent_a ' }), {
      status: 'failed',
      to: '+14155550123',
      batch_id: 'batch_1',
      agent_id: 'agent_a',
    });
    assert.throws(() => callFilters({ colour: 'red' }), /Unknown filter colour/);
  });

  /** A list of `total` rows served in pages as callgate does, recording each request. */
  const pagedList = (total: number) => {
    const ids = Array.from({ length: total }, (_, n) => `call_${String(n).padStart(4, '0')}`);
    const requests: ApiRequest[] = [];
    const fetchPage = async (request: ApiRequest) => {
      requests.push(request);
      const limit = Number(request.qs?.limit);
      const after = request.qs?.starting_after;
      const start = after === undefined ? 0 : ids.indexOf(String(after)) + 1;
      return { data: ids.slice(start, start + limit).map((id) => ({ id })), has_more: start + limit < ids.length };
    };
    return { ids, requests, fetchPage };
  };

  it('returnAll follows starting_after page by page, 100 at a time, with the same filters', async () => {
    const list = pagedList(230);
    const rows = await collectPages(list.fetchPage, { path: '/v1/calls', query: { status: 'completed' }, returnAll: true });
    assert.deepEqual(
      rows.map((row) => row.id),
      list.ids,
    );
    assert.deepEqual(
      list.requests.map((request) => request.qs),
      [
        { status: 'completed', limit: 100 },
        { status: 'completed', limit: 100, starting_after: 'call_0099' },
        { status: 'completed', limit: 100, starting_after: 'call_0199' },
      ],
    );
  });

  it('a limit asks only for what it needs and stops there', async () => {
    const list = pagedList(230);
    const rows = await collectPages(list.fetchPage, { path: '/v1/calls', returnAll: false, limit: 150 });
    assert.equal(rows.length, 150);
    assert.deepEqual(
      list.requests.map((request) => request.qs?.limit),
      [100, 50],
    );
    const few = pagedList(3);
    assert.equal((await collectPages(few.fetchPage, { path: '/v1/calls', returnAll: false, limit: 50 })).length, 3);
    assert.equal(few.requests.length, 1);
  });

  it('an answer that is not a page is an error', async () => {
    await assert.rejects(
      collectPages(async () => ({ nope: true }), { path: '/v1/calls', returnAll: true }),
      /without data and has_more/,
    );
  });

  it("a refusal reads as callgate's code, message, param and request id", () => {
    assert.equal(
      describeRefusal({
        statusCode: 400,
        body: { error: 'invalid_request', message: 'to must be E.164.', param: 'to', request_id: 'req_1' },
      }),
      'callgate answered 400 invalid_request: to must be E.164. (param: to; request req_1)',
    );
    assert.equal(describeRefusal({ statusCode: 502, body: 'Bad gateway' }), 'callgate answered 502: Bad gateway');
  });
});

describe('n8n trigger: events and endpoint checks', () => {
  it('events: at least one, each known, in a stable order', () => {
    assert.deepEqual(chosenEvents(['call.failed', 'call.completed']), ['call.completed', 'call.failed']);
    assert.throws(() => chosenEvents([]), /at least one event/);
    assert.throws(() => chosenEvents(['call.answered']), /Unknown event "call.answered"/);
  });

  it('an endpoint serves the trigger with the same URL, the same events ("*" being all three) and enabled', () => {
    const url = 'https://n8n.example.com/webhook/4f1c/webhook';
    const endpoint = { url, enabled_events: ['call.completed'], status: 'enabled' };
    assert.equal(endpointServes(endpoint, url, ['call.completed']), true);
    assert.equal(endpointServes(endpoint, url, ['call.completed', 'call.failed']), false);
    assert.equal(endpointServes({ ...endpoint, status: 'disabled' }, url, ['call.completed']), false);
    assert.equal(endpointServes({ ...endpoint, url: 'https://n8n.example.com/webhook-test/4f1c/webhook' }, url, ['call.completed']), false);
    assert.equal(endpointServes({ ...endpoint, enabled_events: ['*'] }, url, ['call.completed', 'call.failed', 'batch.completed']), true);
    assert.equal(endpointServes({ ...endpoint, url: 'https://N8N.example.com/webhook/4f1c/webhook' }, url, ['call.completed']), true);
  });
});
