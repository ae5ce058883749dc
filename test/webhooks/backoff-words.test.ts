/** How a failing endpoint's wait for a probe reads in `callgate webhooks list` and the portal. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeBackoff } from '../../src/features/webhook-delivery/deliveries.service.js';

const failing = { failing_since: '2026-11-27T20:19:13.423Z', next_try_at: '2026-11-27T20:19:33.688Z' };

it('says since when an endpoint fails and when its next try is', () => {
  assert.equal(
    describeBackoff({ ...failing, probe_due: false }),
    'failing since 2026-11-27T20:19:13.423Z, next try 2026-11-27T20:19:33.688Z',
  );
});

it('says so when the next try is past: its probe is due or under way, not late', () => {
  assert.equal(
    describeBackoff({ ...failing, probe_due: true }),
    'failing since 2026-11-27T20:19:13.423Z, next try 2026-11-27T20:19:33.688Z (now: a probe is due or under way)',
  );
});
