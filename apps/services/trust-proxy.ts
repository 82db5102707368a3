/**
 * `TRUST_PROXY`: which reverse proxies in front of Relay are believed when they say who the client
 * is (`X-Forwarded-For`) and how it came (`X-Forwarded-Proto`), in the forms Fastify's
 * `trustProxy` takes (issue 47: `true` used to trust every hop, so a client named its own address):
 * - `false` (the default): none; the client is the connection's peer;
 * - `true`: one proxy, the connection's peer (the same as `1`);
 * - a number of hops `N`: the N proxies nearest Relay; the client is the address the Nth one saw;
 * - addresses or networks of the proxies, comma-separated (`10.0.0.1,192.168.0.0/16`, or
 *   `loopback`, `linklocal`, `uniquelocal`): hops from those are believed, the first other one is the client.
 */
import net from 'node:net';

export type TrustProxy = false | number | string[];

/**
 * The setting as Fastify's `trustProxy` option: Fastify 5 no longer counts hops itself (a number
 * trusts nothing), so a number of hops is a function of the hop's index, as Express counts them
 * (0 is the connection's peer). With a count, only the proxies may reach Relay: a client that
 * connects directly is believed about that many hops (addresses do not have that weakness).
 */
export const trustProxyOption = (setting: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) =>
  typeof setting === 'number' ? (_address: string, hop: number) => hop < setting : setting;

const NAMED = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, a network in CIDR notation, or one of proxy-addr's names. */
const isProxyAddress = (value: string): boolean => {
  if (NAMED.has(value)) return true;
  const [address, bits, extra] = value.split('/');
  if (extra !== undefined || address === undefined) return false;
  const family = net.isIP(address);
  if (family === 0) return false;
  if (bits === undefined) return true;
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
};

export const TRUST_PROXY_RULE = 'must be false, true (one proxy), a number of proxies, or their comma-separated addresses or networks';

/** The setting as Fastify's `trustProxy` takes it, or undefined when it is none of the forms above. */
export const parseTrustProxy = (value: string): TrustProxy | undefined => {
  const text = value.trim();
  if (text === 'false') return false;
  if (text === 'true') return 1;
  if (/^\d{1,3}$/.test(text)) return Number(text) === 0 ? false : Number(text);
  const addresses = text.split(',').map((part) => part.trim());
  return addresses.length > 0 && addresses.every(isProxyAddress) ? addresses : undefined;
};
