/**
 * Every catalogue entry's contract fake. The type is keyed by the catalogue's names: a provider added to
 * `providerCatalogue` without its line here fails the type check (and provider-catalogue.test.ts says so at
 * run time too). test/providers/provider-contract.test.ts runs the shared cases against each.
 */
import type { RealProvider } from '../../../src/features/providers/provider-catalogue.js';
import type { ContractFakeFactory } from '../provider-contract.js';
import { startElevenLabsContract } from './elevenlabs.js';
import { startRetellContract } from './retell.js';
import { startVapiContract } from './vapi.js';

export const contractFakes: { readonly [P in RealProvider]: ContractFakeFactory } = {
  elevenlabs: startElevenLabsContract,
  retell: startRetellContract,
  vapi: startVapiContract,
};
