/**
 * Webhook targets must be public https endpoints: a URL that reaches loopback, private, link-local or other
 * special addresses could make callgate attack its own network (SSRF). The URL is checked when an endpoint
 * is saved, and the address actually connected to is checked again at every delivery, inside the socket's
 * DNS lookup, so a name that re-resolves to a private address between the two checks is still refused.
 * IPv6 addresses that carry an IPv4 address (mapped, NAT64, 6to4, Teredo) are judged by that address.
 * CALLGATE_WEBHOOK_ALLOW_PRIVATE=true lifts both rules, for local development and tests. The rule is the
 * endpoints' (what an endpoint's URL may be), so it lives here, below webhook-delivery, whose sender applies
 * it again at every connection.
 */
import dns from 'node:dns';
import net from 'node:net';

const blockedV4 = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blockedV4.addSubnet(network, prefix, 'ipv4');
}

const blockedV6 = new net.BlockList();
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001:2::', 48], // benchmarking
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blockedV6.addSubnet(network, prefix, 'ipv6');
}
/** Only global unicast is routed on the internet; the rest of IPv6 is local, multicast or unassigned. */
const globalUnicastV6 = new net.BlockList();
globalUnicastV6.addSubnet('2000::', 3, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (one that `net.isIP` accepted), zone id dropped. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '');
  // A trailing dotted quad (`::ffff:1.2.3.4`) stands for the last two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const before = head === '' ? [] : head.split(':');
  const after = tail === undefined || tail === '' ? [] : tail.split(':');
  const gap = tail === undefined ? [] : Array<string>(8 - before.length - after.length).fill('0');
  return [...before, ...gap, ...after].map((group) => parseInt(group, 16));
}

/**
 * The IPv4 address an IPv6 address carries and is routed by, or null. Such an address reaches that IPv4
 * host (through the host's own stack, a NAT64 gateway, a 6to4 or a Teredo relay), so it is judged by it:
 * `64:ff9b::a9fe:a9fe` is the cloud metadata service, `2002:c0a8:101::1` a home router.
 */
export function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  // IPv4-mapped ::ffff:a.b.c.d, and IPv4-compatible ::a.b.c.d (deprecated, `::` and `::1` included).
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return v4(g[6]!, g[7]!);
  // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765).
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!);
  // NAT64, the well-known prefix 64:ff9b::/96 (RFC 6052).
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!);
  // 6to4, 2002:aabb:ccdd::/48 (RFC 3056).
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  // Teredo, 2001:0::/32: the client's address, each bit inverted, in the last 32 bits (RFC 4380).
  if (g[0] === 0x2001 && g[1] === 0) return v4(~g[6]! & 0xffff, ~g[7]! & 0xffff);
  return null;
}

/** True for an address that a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !blockedV4.check(address, 'ipv4');
  if (family === 6) {
    const ipv4 = embeddedIpv4(address);
    if (ipv4 !== null) return isPublicAddress(ipv4);
    const plain = address.replace(/%.*$/, '');
    return globalUnicastV6.check(plain, 'ipv6') && !blockedV6.check(plain, 'ipv6');
  }
  return false;
}

/**
 * What to do about a refused local address. A delivery is judged by the server's own setting, not the
 * CLI's that saved the endpoint: an operator who set it for the CLI only must learn that the server needs it.
 */
export const allowPrivateHint =
  'to deliver to local or private addresses, start the server with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true (and restart it)';

/**
 * The rule for webhook URLs in words, for the forms' hints; the refusals below say the same. With private
 * targets allowed any http(s) URL is taken; otherwise only https to public addresses.
 */
export function webhookUrlRule(allowPrivate: boolean): string {
  return allowPrivate ? 'An https or http URL; this server also accepts local and private addresses (development).' : 'A public https URL.';
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Checks a webhook URL's form: https (unless private targets are allowed), no credentials, a host. */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not a valid URL' };
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: allowPrivate ? 'must use https or http' : 'must use https' };
  }
  if (url.username || url.password) return { ok: false, reason: 'must not contain credentials' };
  if (!url.hostname) return { ok: false, reason: 'must have a host' };
  if (raw.length > 2048) return { ok: false, reason: 'is longer than 2048 characters' };
  // `localhost.` (fully qualified) is the same name as `localhost`.
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (!allowPrivate && net.isIP(host) && !isPublicAddress(host)) {
    return { ok: false, reason: 'must not point to a loopback, private, link-local or reserved address' };
  }
  if (!allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) {
    return { ok: false, reason: 'must not point to localhost' };
  }
  return { ok: true, url };
}

/** Resolves a URL's host and checks every address; used when an endpoint is saved. */
export async function checkWebhookTarget(raw: string, allowPrivate: boolean): Promise<UrlCheck> {
  const form = checkWebhookUrl(raw, allowPrivate);
  if (!form.ok || allowPrivate) return form;
  const host = form.url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) return form;
  try {
    const addresses = await dns.promises.lookup(host, { all: true, verbatim: true });
    if (addresses.length === 0) return { ok: false, reason: 'has a host name that does not resolve' };
    const blocked = addresses.find((entry) => !isPublicAddress(entry.address));
    if (blocked) return { ok: false, reason: `resolves to a non-public address (${blocked.address})` };
    return form;
  } catch {
    return { ok: false, reason: 'has a host name that does not resolve' };
  }
}

/**
 * Whether a URL is refused only because private targets are not allowed: with
 * CALLGATE_WEBHOOK_ALLOW_PRIVATE=true its form would be accepted (an http or local receiver).
 */
export function refusedOnlyAsPrivate(raw: string): boolean {
  return !checkWebhookUrl(raw, false).ok && checkWebhookUrl(raw, true).ok;
}

/**
 * The refusal `guardedLookup` hands to the connection: an errno-style Error (what a `lookup` callback
 * takes), whose message becomes the failed attempt's error. Not a failure of ours to render, so not an
 * ApiError.
 */
function blockedAddress(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code: 'ERR_WEBHOOK_BLOCKED_ADDRESS' });
}

/**
 * Why a URL whose host is an IP literal may not be connected to, or null. Node connects to a literal
 * without calling `lookup`, so `guardedLookup` never sees these: the sender asks here first.
 */
export function blockedLiteralHost(url: URL, allowPrivate: boolean): string | null {
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!net.isIP(host) || isPublicAddress(host)) return null;
  return `${host} is not a public address; ${allowPrivateHint}`;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A `lookup` for http(s).request that refuses non-public addresses at connect time. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as dns.LookupAddress[];
      const usable = allowPrivate ? list : list.filter((entry) => isPublicAddress(entry.address));
      if (usable.length === 0) {
        const addresses = list.map((entry) => entry.address).join(', ');
        return callback(blockedAddress(`${hostname} resolves to no public address (${addresses}); ${allowPrivateHint}`), '');
      }
      if (options.all) return callback(null, usable);
      const first = usable[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
