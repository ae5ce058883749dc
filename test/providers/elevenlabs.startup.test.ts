/**
 * The real server process with each state of the ElevenLabs settings, set up with the operator CLI as a
 * new user would: it says at start-up which setting is missing and refuses what needs it (live calls to an
 * ElevenLabs agent without ELEVENLABS_API_KEY, their webhooks without ELEVENLABS_WEBHOOK_SECRET), each time
 * with a 503 provider_unavailable naming the setting; with both set, a call placed and ended through the
 * fake ElevenLabs leaves neither the key, the secret nor our token anywhere in the process's output.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import { signElevenLabs } from '../../src/features/providers/elevenlabs/elevenlabs.signature.js';
import { cliEnv, runFailing, runJson } from '../support/cli-runner.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { apiKey, transcriptionEvent, webhookSecret, workspaceNumbers } from '../support/elevenlabs-fixtures.js';
import { waitUntil } from '../support/wait.js';

const missingKeyWarning = 'ELEVENLABS_API_KEY is not set';
const missingSecretWarning = 'ELEVENLABS_WEBHOOK_SECRET is not set';

let database: TestDatabase;
let fake: FakeElevenLabs;
let server: ServerProcess | undefined;
let token: string;

before(async () => {
  database = await createTestDatabase('sqlite');
  fake = await startFakeElevenLabs({ apiKey });
  fake.phoneNumbers = structuredClone(workspaceNumbers);
  const withKey = cliEnv({ ...database.env, ELEVENLABS_API_KEY: apiKey, ELEVENLABS_BASE_URL: fake.url });
  const accountId = (await runJson(withKey, ['accounts', 'create', '--name', 'Outside'])).id as string;
  token = (await runJson(withKey, ['keys', 'create', '--account', accountId, '--name', 'live', '--mode', 'live'])).token as string;
  const addAgent = [
    'agents',
    'add',
    '--account',
    accountId,
    '--agent-id',
    'agent_el_twilio',
    '--name',
    'Reminders',
    '--provider',
    'elevenlabs',
    '--phone-number-id',
    'phnum_twilio_1',
  ];
  // Refused by hand without the key, naming it; accepted with it.
  await runFailing(cliEnv(database.env), addAgent, 1, /provider elevenlabs cannot be added: this server has no ELEVENLABS_API_KEY set/);
  await runJson(withKey, addAgent);
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
});
after(async () => {
  await fake?.close();
  await database?.drop();
});

async function start(settings: Record<string, string>, level = 'info'): Promise<ServerProcess> {
  // Set explicitly, even empty: nothing of the test runner's own environment decides.
  server = await startServerProcess({
    env: {
      ...database.env,
      ELEVENLABS_API_KEY: '',
      ELEVENLABS_WEBHOOK_SECRET: '',
      ELEVENLABS_BASE_URL: fake.url,
      CALLGATE_LOG_LEVEL: level,
      ...settings,
    },
  });
  return server;
}

/** The process's JSON log lines with the given message fragment. */
function logLines(proc: ServerProcess, fragment: string): Record<string, unknown>[] {
  return proc
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(fragment))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function postCall(url: string): Promise<Response> {
  return fetch(`${url}/v1/calls`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: 'agent_el_twilio', to: '+14155550123', metadata: { customer_name: 'Ada' } }),
  });
}

function postWebhook(url: string, body: string, signature: string): Promise<Response> {
  return fetch(`${url}/providers/elevenlabs/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'elevenlabs-signature': signature },
    body,
  });
}

it('without ELEVENLABS_API_KEY: a warning at start-up, and live calls to an ElevenLabs agent get 503 naming it', async () => {
  const proc = await start({});
  const [warning, ...more] = logLines(proc, missingKeyWarning);
  assert.ok(warning, `no start-up warning in:\n${proc.output()}`);
  assert.equal(warning.level, 40);
  assert.equal(more.length, 0);

  const before = fake.requests.length;
  const res = await postCall(proc.url);
  assert.equal(res.status, 503);
  const body = (await res.json()) as Record<string, string>;
  assert.equal(body.error, 'provider_unavailable');
  assert.match(body.message!, /ELEVENLABS_API_KEY/);
  assert.equal(fake.requests.length, before, 'ElevenLabs was not asked');
});

it('without ELEVENLABS_WEBHOOK_SECRET: a warning at start-up, and their webhooks get 503 naming it', async () => {
  const proc = await start({ ELEVENLABS_API_KEY: apiKey });
  assert.equal(logLines(proc, missingKeyWarning).length, 0);
  assert.equal(logLines(proc, missingSecretWarning).length, 1, proc.output());

  const body = JSON.stringify(
    transcriptionEvent('conv_any', { startSecs: Math.floor(Date.now() / 1000) - 60, durationSecs: 5, summary: 'x' }),
  );
  const res = await postWebhook(proc.url, body, signElevenLabs(webhookSecret, Math.floor(Date.now() / 1000), body));
  assert.equal(res.status, 503);
  const answer = (await res.json()) as Record<string, string>;
  assert.equal(answer.error, 'provider_unavailable');
  assert.match(answer.message!, /ELEVENLABS_WEBHOOK_SECRET/);
});

it('with both set: no warning; a call placed and ended by webhook; no secret in the output even at trace level', async () => {
  const proc = await start({ ELEVENLABS_API_KEY: apiKey, ELEVENLABS_WEBHOOK_SECRET: webhookSecret }, 'trace');
  assert.equal(logLines(proc, missingKeyWarning).length + logLines(proc, missingSecretWarning).length, 0);

  const created = await postCall(proc.url);
  assert.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  const outbound = fake.requestsTo('outbound').at(-1)!;
  assert.equal(outbound.headers['xi-api-key'], apiKey);
  assert.equal((outbound.body as Record<string, unknown>).agent_phone_number_id, 'phnum_twilio_1');
  assert.equal(id, `call_${[...fake.conversations.keys()].at(-1)}`);

  const now = Math.floor(Date.now() / 1000);
  const body = JSON.stringify(
    transcriptionEvent(id.slice('call_'.length), { startSecs: now - 60, durationSecs: 42, summary: 'Confirmed.' }),
  );
  const refused = await postWebhook(proc.url, body, signElevenLabs('wsec_wrong', now, body));
  assert.equal(refused.status, 401);
  const accepted = await postWebhook(proc.url, body, signElevenLabs(webhookSecret, now, body));
  assert.equal(accepted.status, 200);
  assert.deepEqual(await accepted.json(), { received: true, handling: 'recorded' });
  const unknown = JSON.stringify(transcriptionEvent('conv_not_ours', { startSecs: now - 60, durationSecs: 1, summary: 'x' }));
  assert.equal((await postWebhook(proc.url, unknown, signElevenLabs(webhookSecret, now, unknown))).status, 200);

  const read = await fetch(`${proc.url}/v1/calls/${id}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(((await read.json()) as Record<string, unknown>).status, 'completed');
  // The process writes its log lines after it answers, so wait for the last ones before reading the output.
  await waitUntil(() => logLines(proc, 'not stored yet').length === 1, 'the log line of the report held for a call not stored');
  await waitUntil(() => logLines(proc, `"url":"/v1/calls/${id}"`).length === 1, 'the access-log line of the last request');

  const output = proc.output();
  // Lines below info (debug = 20, trace = 10) are there: the secrets were checked at the most talkative level.
  assert.ok(
    logLines(proc, '"level":').some((line) => (line.level as number) < 30),
    output,
  );
  for (const [name, secretText] of [
    ['ELEVENLABS_API_KEY', apiKey],
    ['ELEVENLABS_WEBHOOK_SECRET', webhookSecret],
    ['API token', token],
  ] as const) {
    assert.ok(!output.includes(secretText), `${name} appears in the server's output`);
  }
});
