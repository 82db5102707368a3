import { isIPv4, isIPv6 } from 'node:net';

/**
 * Whether an address is one that a webhook may reach: a public unicast address. Loopback,
 * private (RFC 1918, unique local), link-local, shared (CGNAT), unspecified, multicast,
 * broadcast, documentation and benchmarking ranges are not: a webhook pointed there would let an
 * app owner make Relay call into the network it runs in.
 */
export const isPublicAddress = (address: string): boolean => {
  if (isIPv4(address)) return isPublicIPv4(address.split('.').map(Number) as [number, number, number, number]);
  if (isIPv6(address)) return isPublicIPv6(address);
  return false;
};

const isPublicIPv4 = ([a, b, c]: [number, number, number, number]): boolean =>
  !(
    a === 0 || // this network
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // shared address space (CGNAT)
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && c === 0) || // IETF protocol assignments
    (a === 192 && b === 0 && c === 2) || // documentation
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224 // multicast, reserved, broadcast
  );

/** The 16-bit groups of an IPv6 address (with `::` expanded and a dotted IPv4 tail converted). */
const groups = (address: string): number[] => {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...middle, ...right].map((g) => Number.parseInt(g, 16));
};

const isPublicIPv6 = (address: string): boolean => {
  const g = groups(address);
  if (g.length !== 8 || g.some((n) => !Number.isInteger(n))) return false;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) {
    // IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765) and the deprecated
    // IPv4-compatible form (::a.b.c.d): judged as the IPv4 address they carry (also :: and ::1).
    const mapped = g4 === 0 && g5 === 0xffff;
    const translated = g4 === 0xffff && g5 === 0;
    const compatible = g4 === 0 && g5 === 0;
    if (compatible && g6 === 0 && (g7 === 0 || g7 === 1)) return false;
    if (mapped || translated || compatible) return isPublicIPv4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]);
  }
  if ((g0 & 0xfe00) === 0xfc00) return false; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return false; // link-local fe80::/10
  if ((g0 & 0xff00) === 0xff00) return false; // multicast
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // documentation
  if (g0 === 0x0064 && g1 === 0xff9b) return false; // NAT64 (an IPv4 behind it may be private)
  if (g0 === 0x2002) return false; // 6to4 (embeds an IPv4 address)
  return true;
};

/** Host names that never leave the machine or the local network. */
const LOCAL_NAME = /(^|\.)(localhost|local|localdomain|internal|home\.arpa)$/i;

export interface WebhookUrlPolicy {
  /** Allow plain http and loopback, private or link-local hosts (an operator's explicit choice; tests need it). */
  readonly allowLocal: boolean;
}

/**
 * What is wrong with a webhook URL, if anything: it must be https (http only where the operator
 * allows local targets), carry no user name or password, and not name a local host or a
 * non-public address. A host name is checked again when it is resolved at delivery time (DNS can
 * change after this check).
 */
export const webhookUrlProblem = (raw: string, policy: WebhookUrlPolicy): string | undefined => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowLocal && url.protocol === 'http:')) return 'must use https (an operator allows http with WEBHOOK_ALLOW_LOCAL=true)';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (policy.allowLocal) return undefined;
  // A fully qualified name's trailing dot (`localhost.`) names the same host: judged without it.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname.replace(/\.+$/, '');
  if (isIPv4(host) || isIPv6(host)) return isPublicAddress(host) ? undefined : 'must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)';
  if (LOCAL_NAME.test(host) || !host.includes('.')) return 'must not point to a local host name (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)';
  return undefined;
};
