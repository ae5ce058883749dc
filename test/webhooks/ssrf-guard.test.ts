/**
 * The SSRF guard: which addresses count as public, what a webhook URL may look like when it is saved, and
 * the check at delivery time, which must hold even for an endpoint that slipped past the save-time check
 * (created while private targets were allowed, or written straight into the database).
 */
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { after, afterEach, before, describe, it, mock } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../src/db/database.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { enqueueEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import { checkWebhookTarget, checkWebhookUrl, guardedLookup, isPublicAddress } from '../../src/features/webhook-endpoints/ssrf-guard.js';
import { createHttpSender } from '../../src/features/webhook-delivery/webhook-sender.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const refusedAddresses = [
  '127.0.0.1',
  '127.255.255.254',
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.0.1',
  '169.254.169.254',
  '0.0.0.0',
  '100.64.0.1',
  '224.0.0.1',
  '255.255.255.255',
  '::',
  '::1',
  'fe80::1',
  'FE80::1',
  'fc00::1',
  'fd12:3456::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:a9fe:a9fe', // 169.254.169.254, mapped
  '::127.0.0.1', // IPv4-compatible
  '::7f00:1', // the same, as the URL parser writes it
  '::ffff:0:7f00:1', // IPv4-translated 127.0.0.1
  // IPv6 addresses carrying a private IPv4 address are judged by it: NAT64, 6to4, Teredo.
  '64:ff9b::7f00:1',
  '64:ff9b::127.0.0.1',
  '64:ff9b::a00:1', // 10.0.0.1
  '64:ff9b::a9fe:a9fe', // 169.254.169.254, the cloud metadata service
  '64:FF9B::C0A8:101', // 192.168.1.1
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2002:a9fe:a9fe::', // 6to4 of 169.254.169.254
  '2002:c0a8:101:1::1', // 6to4 of 192.168.1.1
  '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo, client 127.0.0.1 (bits inverted)
  '2001:0:4136:e378:8000:63bf:f5ff:fffe', // Teredo, client 10.0.0.1
  '64:ff9b:1::808:808', // local-use NAT64
  'fe80::1%eth0', // with a zone id
  '2001:db8::1',
  '3fff::1', // documentation
  '2001:2::1', // benchmarking
  '1::1', // outside global unicast (2000::/3)
  '4000::1',
];
const allowedAddresses = [
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '192.169.0.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::808:808', // NAT64 of 8.8.8.8, as a DNS64 resolver answers on an IPv6-only network
  '64:ff9b::8.8.8.8',
  '2002:808:808::1', // 6to4 of 8.8.8.8
  '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, client 8.8.8.8
];

describe('isPublicAddress', () => {
  for (const address of refusedAddresses) {
    it(`refuses ${address}`, () => assert.equal(isPublicAddress(address), false));
  }
  for (const address of allowedAddresses) {
    it(`allows ${address}`, () => assert.equal(isPublicAddress(address), true));
  }
  it('refuses what is not an address at all', () => {
    for (const text of ['', 'localhost', 'example.com', '127.0.0.1:80', '[::1]']) assert.equal(isPublicAddress(text), false, text);
  });
});

describe('checkWebhookUrl', () => {
  const refused = (url: string, allowPrivate = false) => {
    const check = checkWebhookUrl(url, allowPrivate);
    assert.equal(check.ok, false, `${url} should be refused`);
    return check.ok ? '' : check.reason;
  };

  it('refuses http unless private targets are allowed', () => {
    assert.match(refused('http://8.8.8.8/hooks'), /https/);
    assert.equal(checkWebhookUrl('http://8.8.8.8/hooks', true).ok, true);
    assert.match(refused('ftp://8.8.8.8/hooks', true), /https/);
  });

  it('refuses loopback, private, link-local and metadata addresses, however they are written', () => {
    for (const url of [
      'https://127.0.0.1/hooks',
      'https://127.1/hooks',
      'https://2130706433/hooks',
      'https://0x7f000001/hooks',
      'https://10.0.0.1/hooks',
      'https://172.16.0.1/hooks',
      'https://192.168.1.1/hooks',
      'https://169.254.169.254/latest/meta-data/',
      'https://0.0.0.0/hooks',
      'https://[::1]/hooks',
      'https://[fe80::1]/hooks',
      'https://[fc00::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://[::127.0.0.1]/hooks',
      'https://[64:ff9b::127.0.0.1]/hooks',
      'https://[64:ff9b::a9fe:a9fe]/latest/meta-data/',
      'https://[2002:c0a8:101::1]/hooks',
      'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hooks',
    ]) {
      assert.match(refused(url), /loopback, private/, url);
    }
  });

  it('refuses localhost by name, also fully qualified or as a subdomain', () => {
    for (const url of [
      'https://localhost/hooks',
      'https://LOCALHOST:8443/hooks',
      'https://localhost./hooks',
      'https://api.localhost/hooks',
    ]) {
      assert.match(refused(url), /localhost/, url);
    }
  });

  it('refuses credentials in the URL, even when private targets are allowed', () => {
    assert.match(refused('https://user:pass@8.8.8.8/hooks'), /credentials/);
    assert.match(refused('https://user@8.8.8.8/hooks'), /credentials/);
    assert.match(refused('http://user:pass@127.0.0.1/hooks', true), /credentials/);
  });

  it('refuses what is not a URL, and very long URLs', () => {
    assert.match(refused('not a url'), /valid URL/);
    assert.match(refused(`https://8.8.8.8/${'a'.repeat(2_100)}`), /2048/);
  });

  it('accepts a public IP literal over https, and private targets when allowed', () => {
    for (const url of [
      'https://8.8.8.8/hooks',
      'https://1.1.1.1:8443/a?b=c',
      'https://[2606:4700:4700::1111]/hooks',
      'https://[64:ff9b::808:808]/hooks',
    ]) {
      assert.equal(checkWebhookUrl(url, false).ok, true, url);
    }
    for (const url of ['http://127.0.0.1:3000/hooks', 'https://localhost/hooks', 'https://[::1]/hooks', 'https://169.254.169.254/']) {
      assert.equal(checkWebhookUrl(url, true).ok, true, url);
    }
  });
});

describe('checkWebhookTarget', () => {
  afterEach(() => mock.restoreAll());
  /** Answers DNS with `addresses` for every name, so no test depends on a resolver or the internet. */
  const resolveTo = (...addresses: string[]) =>
    mock.method(dns.promises, 'lookup', async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

  it('refuses what the form check refuses, without asking DNS', async () => {
    const lookup = resolveTo('8.8.8.8');
    for (const url of [
      'https://127.0.0.1/',
      'https://localhost/',
      'https://[::1]/',
      'https://169.254.169.254/',
      'http://8.8.8.8/',
      'https://u:p@8.8.8.8/',
    ]) {
      assert.equal((await checkWebhookTarget(url, false)).ok, false, url);
    }
    assert.equal(lookup.mock.callCount(), 0);
  });

  it('accepts a public IP literal without asking DNS', async () => {
    const lookup = resolveTo('10.0.0.1');
    assert.equal((await checkWebhookTarget('https://8.8.8.8/hooks', false)).ok, true);
    assert.equal(lookup.mock.callCount(), 0);
  });

  it('refuses a name that resolves to a private address, even when only one of its addresses is private', async () => {
    resolveTo('10.1.2.3');
    const check = await checkWebhookTarget('https://hooks.example.com/in', false);
    assert.deepEqual(check, { ok: false, reason: 'resolves to a non-public address (10.1.2.3)' });
    resolveTo('8.8.8.8', '::1');
    const mixed = await checkWebhookTarget('https://hooks.example.com/in', false);
    assert.deepEqual(mixed, { ok: false, reason: 'resolves to a non-public address (::1)' });
  });

  it('judges a NAT64 or 6to4 answer by the IPv4 address it carries', async () => {
    for (const address of ['64:ff9b::a9fe:a9fe', '64:ff9b::a00:1', '2002:7f00:1::1']) {
      resolveTo(address);
      assert.deepEqual(
        await checkWebhookTarget('https://hooks.example.com/in', false),
        { ok: false, reason: `resolves to a non-public address (${address})` },
        address,
      );
      mock.restoreAll();
    }
    resolveTo('64:ff9b::808:808', '2002:808:808::1');
    assert.equal((await checkWebhookTarget('https://hooks.example.com/in', false)).ok, true);
  });

  it('accepts a name whose every address is public', async () => {
    resolveTo('8.8.8.8', '2606:4700:4700::1111');
    assert.equal((await checkWebhookTarget('https://hooks.example.com/in', false)).ok, true);
  });

  it('refuses a name that does not resolve', async () => {
    mock.method(dns.promises, 'lookup', async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    });
    assert.deepEqual(await checkWebhookTarget('https://nowhere.invalid/', false), {
      ok: false,
      reason: 'has a host name that does not resolve',
    });
  });

  it('with private targets allowed, accepts localhost without asking DNS', async () => {
    const lookup = resolveTo('10.0.0.1');
    assert.equal((await checkWebhookTarget('http://localhost:3000/hooks', true)).ok, true);
    assert.equal(lookup.mock.callCount(), 0);
  });
});

describe('the HTTP sender checks the address it connects to', () => {
  let receiver: WebhookReceiver;
  const port = () => new URL(receiver.url).port;
  const request = (url: string) => ({ url, headers: {}, body: '{}' });

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(async () => receiver.close());

  it('refuses loopback targets, as an IP literal or by name, without connecting', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: false });
    try {
      const literal = await sender.send(request(`http://127.0.0.1:${port()}/hooks`));
      assert.equal(literal.kind, 'error');
      assert.match(literal.kind === 'error' ? literal.error : '', /127\.0\.0\.1 is not a public address/);
      const mapped = await sender.send(request(`http://[::ffff:127.0.0.1]:${port()}/hooks`));
      assert.match(mapped.kind === 'error' ? mapped.error : '', /::ffff:7f00:1 is not a public address/);
      const named = await sender.send(request(`http://localhost:${port()}/hooks`));
      assert.match(named.kind === 'error' ? named.error : '', /localhost resolves to no public address \(.*(127\.0\.0\.1|::1)/);
      assert.equal(receiver.received.length, 0);
    } finally {
      sender.close();
    }
  });

  it('refuses a NAT64 or 6to4 literal of a private address, and a name resolving to one, without connecting', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: false });
    try {
      const nat64 = await sender.send(request(`http://[64:ff9b::127.0.0.1]:${port()}/hooks`));
      assert.match(nat64.kind === 'error' ? nat64.error : '', /64:ff9b::7f00:1 is not a public address/);
      const sixToFour = await sender.send(request(`http://[2002:a9fe:a9fe::1]:${port()}/hooks`));
      assert.match(sixToFour.kind === 'error' ? sixToFour.error : '', /2002:a9fe:a9fe::1 is not a public address/);
    } finally {
      sender.close();
    }
    // At connect time the name is resolved by guardedLookup: a DNS64 answer for a private address is refused.
    mock.method(dns, 'lookup', (_host: string, _options: unknown, callback: (e: null, a: dns.LookupAddress[]) => void) =>
      callback(null, [{ address: '64:ff9b::a9fe:a9fe', family: 6 }]),
    );
    try {
      const refused = await new Promise<Error | null>((resolve) =>
        guardedLookup(false)('hooks.example.com', { all: true }, (error) => resolve(error)),
      );
      assert.match(refused?.message ?? '', /hooks\.example\.com resolves to no public address \(64:ff9b::a9fe:a9fe\)/);
      const allowed = await new Promise<unknown>((resolve) =>
        guardedLookup(true)('hooks.example.com', { all: true }, (_e, addresses) => resolve(addresses)),
      );
      assert.deepEqual(allowed, [{ address: '64:ff9b::a9fe:a9fe', family: 6 }]);
    } finally {
      mock.restoreAll();
    }
    assert.equal(receiver.received.length, 0);
  });

  it('connects when private targets are allowed', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: true });
    try {
      const answer = await sender.send(request(`http://127.0.0.1:${port()}/hooks`));
      assert.equal(answer.kind === 'response' ? answer.status : answer.error, 200);
      assert.equal(receiver.received.length, 1);
    } finally {
      sender.close();
    }
  });

  it('answers an invalid URL with an error instead of throwing', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: false });
    try {
      assert.deepEqual(await sender.send(request('not a url')), { kind: 'error', error: 'invalid URL', durationMs: 0 });
    } finally {
      sender.close();
    }
  });
});

async function attemptsOf(db: Db, endpointId: string) {
  return db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .select(['a.attempt_number', 'a.status_code', 'a.error', 'd.status'])
    .where('d.endpoint_id', '=', endpointId)
    .orderBy('a.attempt_number')
    .execute();
}

/** Waits until the endpoint's delivery has ended (succeeded or failed). */
async function deliveryEnded(db: Db, endpointId: string, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await db.selectFrom('webhook_deliveries').select('status').where('endpoint_id', '=', endpointId).executeTakeFirst();
    if (row && row.status !== 'pending') return row.status;
    if (Date.now() > deadline) throw new Error(`the delivery to ${endpointId} is still ${row?.status ?? 'missing'}`);
    await sleep(20);
  }
}

await forEachDialect('SSRF guard at delivery time', (dialect) => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  before(async () => {
    // The server config forbids private targets; the endpoints below were saved as if it once allowed them.
    t = await startTestApp(dialect, {
      env: { CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'false', CALLGATE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms', CALLGATE_WEBHOOK_TIMEOUT_MS: '2000' },
      startWorker: true,
      overrides: { dispatcherSweepIntervalMs: 20, random: () => 0.5 },
    });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  const deliverTo = async (url: string) => {
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url });
    await enqueueEvent(t.services.db, t.services.clock, {
      accountId: t.seed.accountId,
      mode: null,
      type: 'webhook.test',
      callId: null,
      data: { message: 'ssrf' },
      endpointId: endpoint.id,
    });
    t.services.notifier.notify();
    return endpoint.id;
  };

  for (const [host, blocked] of [
    ['127.0.0.1', /127\.0\.0\.1 is not a public address/],
    ['[::ffff:127.0.0.1]', /::ffff:7f00:1 is not a public address/],
    ['[64:ff9b::127.0.0.1]', /64:ff9b::7f00:1 is not a public address/],
    ['localhost', /localhost resolves to no public address \(.*(127\.0\.0\.1|::1)/],
  ] as const) {
    it(`a delivery to http://${host}:<port> never reaches the receiver; each attempt names the blocked address`, async () => {
      const endpointId = await deliverTo(`http://${host}:${new URL(receiver.url).port}/hooks`);
      assert.equal(await deliveryEnded(t.services.db, endpointId), 'failed');
      const attempts = await attemptsOf(t.services.db, endpointId);
      assert.deepEqual(
        attempts.map((a) => a.attempt_number),
        [1, 2, 3],
      );
      for (const attempt of attempts) {
        assert.equal(attempt.status_code, null);
        assert.match(attempt.error ?? '', blocked);
      }
      assert.equal(receiver.received.length, 0);
    });
  }
});
