/**
 * The trigger's Standard Webhooks verification as a pure function: the example of docs/webhooks.md, the
 * timestamp window, several signatures, and every way a delivery is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sign, signingKey, verifySignature } from '../shared/signature.js';

// The worked example of docs/webhooks.md ("Check your code against this example").
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const id = 'evt_01m814yhv5gygd5sn8nfsshn24';
const timestamp = '1795335190';
const body =
  '{"id":"evt_01m814yhv5gygd5sn8nfsshn24","type":"call.completed","created_at":"2026-11-22T08:13:09.781Z","livemode":true,"data":{"id":"call_conv_01m814yhrr45qdbkmfdz0dmhmg","agent_id":"agent_reminders","status":"completed","duration_seconds":107,"transcript_summary":"The agent delivered the reminder; the contact confirmed and had no further questions.","started_at":"2026-11-22T08:11:21.715Z","ended_at":"2026-11-22T08:13:08.715Z","analysis":{"successful":true,"data":{"outcome":"confirmed","follow_up_needed":false}},"to":"+14155550123","metadata":{"customer_name":"Ada","appointment":"14:00"}}}';
const signature = 'v1,SOaYL16u2XHUrVB3poaHj/27JXbjCVB9du4or8u6QtQ=';
const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
const now = Number(timestamp);

describe('n8n trigger: signature verification', () => {
  it("signs the documentation's example as documented, and verifies it at its time", () => {
    assert.equal(`v1,${sign(secret, id, timestamp, body)}`, signature);
    const result = verifySignature({ rawBody: Buffer.from(body), headers, secret, nowSeconds: now });
    assert.equal(result.ok, true);
    assert.equal(result.ok && result.event.id, id);
  });

  it('takes the delivery within five minutes either way, not beyond', () => {
    for (const offset of [-300, 300]) assert.equal(verifySignature({ rawBody: body, headers, secret, nowSeconds: now + offset }).ok, true);
    for (const offset of [-301, 301]) {
      const result = verifySignature({ rawBody: body, headers, secret, nowSeconds: now + offset });
      assert.deepEqual(result, { ok: false, reason: 'webhook-timestamp is more than 300 seconds away from this clock.' });
    }
  });

  it('accepts any one matching v1 signature of several (a rotation), skipping other versions', () => {
    const other = `v1,${sign('whsec_c2Vjb25k', id, timestamp, body)}`;
    for (const header of [`${other} ${signature}`, `v2,abc ${signature}`, `${signature} ${other}`]) {
      assert.equal(
        verifySignature({ rawBody: body, headers: { ...headers, 'webhook-signature': header }, secret, nowSeconds: now }).ok,
        true,
      );
    }
  });

  it('refuses a changed body, a wrong secret, a signature of another version, and a missing or doubled header', () => {
    const refused = (input: Partial<Parameters<typeof verifySignature>[0]>) =>
      verifySignature({ rawBody: body, headers, secret, nowSeconds: now, ...input });
    assert.equal(refused({ rawBody: body.replace('"completed"', '"failed"') }).ok, false);
    assert.equal(refused({ rawBody: `${body}\n` }).ok, false, 'one byte more');
    assert.equal(refused({ rawBody: JSON.stringify(JSON.parse(body), null, 1) }).ok, false, 'parsed and serialised again');
    assert.equal(refused({ secret: 'whsec_c2Vjb25k' }).ok, false);
    assert.equal(refused({ headers: { ...headers, 'webhook-signature': signature.replace('v1,', 'v2,') } }).ok, false);
    assert.equal(refused({ headers: { ...headers, 'webhook-signature': 'v1,' } }).ok, false);
    assert.equal(refused({ headers: { ...headers, 'webhook-id': 'evt_other' } }).ok, false);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const { [name]: _left, ...missing } = headers as Record<string, string>;
      assert.match(String((refused({ headers: missing }) as { reason?: string }).reason), /headers are required/);
    }
    assert.equal(refused({ headers: { ...headers, 'webhook-signature': [signature, signature] } }).ok, false);
    assert.equal(refused({ headers: { ...headers, 'webhook-timestamp': '1795335190.5' } }).ok, false);
  });

  it('refuses a secret that is not whsec_ base64, and a signed body that is not a JSON object', () => {
    assert.equal(signingKey('whsec_'), undefined);
    assert.equal(signingKey('whsec_not base64!'), undefined);
    assert.deepEqual(verifySignature({ rawBody: body, headers, secret: 'whsec_', nowSeconds: now }), {
      ok: false,
      reason: 'The stored signing secret is not a whsec_ secret.',
    });
    const notJson = 'hello';
    const signed = { ...headers, 'webhook-signature': `v1,${sign(secret, id, timestamp, notJson)}` };
    assert.deepEqual(verifySignature({ rawBody: notJson, headers: signed, secret, nowSeconds: now }), {
      ok: false,
      reason: 'The signed body is not JSON.',
    });
  });
});
