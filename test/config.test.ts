/** The configuration module on its own: how CALLGATE_ROLES is read. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config.js';

describe('CALLGATE_ROLES', () => {
  const roles = (value: string | undefined) => [...loadConfig(value === undefined ? {} : { CALLGATE_ROLES: value }).roles].sort();

  it('runs both roles by default, for api,worker in any order, and for "both"', () => {
    for (const value of [undefined, '', 'api,worker', 'worker, api', 'both']) {
      assert.deepEqual(roles(value), ['api', 'worker'], String(value));
    }
  });

  it('runs one role when told', () => {
    assert.deepEqual(roles('api'), ['api']);
    assert.deepEqual(roles('worker'), ['worker']);
  });

  it('refuses anything else, naming the setting and the values it takes', () => {
    for (const value of ['all', 'api,web', ',', 'both,api']) {
      assert.throws(() => roles(value), /CALLGATE_ROLES must be api, worker, api,worker or both, got/, value);
    }
  });
});
