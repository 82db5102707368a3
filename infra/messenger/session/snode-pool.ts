import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { isPublicAddress } from '../../net/public-address.ts';

/**
 * Service nodes as the network lists them, read defensively: an entry without a usable address or
 * key is dropped, lists are cut to a bound, and nothing in them is trusted beyond "where to send".
 * An address that is not public (loopback, private, link-local, shared, multicast, reserved: the
 * rules of webhook URLs, infra/net/public-address.ts) is refused wherever it comes from (seed list,
 * pool refresh, `get_swarm`, a 421 answer), so no answer can make Relay call into the network it
 * runs in; `allowPrivate` lifts that for tests on loopback.
 */
export interface AddressPolicy {
  readonly allowPrivate: boolean;
}

/** Nodes read from an answer, and how many entries were refused for their address. */
export interface ReadNodes {
  readonly nodes: Snode[];
  readonly refused: number;
}
export interface Snode {
  readonly ip: string;
  readonly port: number;
  /** Hex Ed25519 key: the node's identity, and the key `last_hash` is kept under. */
  readonly ed25519: string;
  readonly x25519?: string;
}

const hexKey = z.string().regex(/^[0-9a-f]{64}$/);
const port = z.number().int().min(1).max(65_535);
const ipv4 = z.string().regex(/^(\d{1,3})(\.\d{1,3}){3}$/).refine((ip) => ip !== '0.0.0.0' && ip.split('.').every((part) => Number(part) <= 255));

/** An entry of `get_n_service_nodes` (seed) or `get_service_nodes` (oxend through a snode). */
const serviceNodeState = z.object({ public_ip: ipv4, storage_port: port, pubkey_ed25519: hexKey, pubkey_x25519: hexKey.optional() });
/** An entry of a swarm as `get_swarm` and 421 answers give it. */
const swarmMember = z.object({ ip: ipv4, port_https: port, pubkey_ed25519: hexKey, pubkey_x25519: hexKey.optional() });

export function serviceNodesFrom(states: unknown, max: number, policy: AddressPolicy): ReadNodes {
  if (!Array.isArray(states)) return { nodes: [], refused: 0 };
  const nodes: Snode[] = [];
  const seen = new Set<string>();
  let refused = 0;
  for (const entry of states.slice(0, max * 2)) {
    const parsed = serviceNodeState.safeParse(entry);
    if (!parsed.success || seen.has(parsed.data.pubkey_ed25519)) continue;
    if (!policy.allowPrivate && !isPublicAddress(parsed.data.public_ip)) {
      refused++;
      continue;
    }
    seen.add(parsed.data.pubkey_ed25519);
    nodes.push({
      ip: parsed.data.public_ip,
      port: parsed.data.storage_port,
      ed25519: parsed.data.pubkey_ed25519,
      ...(parsed.data.pubkey_x25519 ? { x25519: parsed.data.pubkey_x25519 } : {}),
    });
  }
  return { nodes: shuffled(nodes).slice(0, max), refused };
}

/** The members of a swarm answer (`{ snodes: [...] }`), or undefined when the answer names no usable node. */
export function swarmFrom(body: unknown, max: number, policy: AddressPolicy): Snode[] | undefined {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { snodes?: unknown }).snodes)) return undefined;
  const nodes: Snode[] = [];
  for (const entry of ((body as { snodes: unknown[] }).snodes).slice(0, max)) {
    const parsed = swarmMember.safeParse(entry);
    if (!parsed.success) continue;
    if (!policy.allowPrivate && !isPublicAddress(parsed.data.ip)) continue;
    nodes.push({
      ip: parsed.data.ip,
      port: parsed.data.port_https,
      ed25519: parsed.data.pubkey_ed25519,
      ...(parsed.data.pubkey_x25519 ? { x25519: parsed.data.pubkey_x25519 } : {}),
    });
  }
  return nodes.length > 0 ? nodes : undefined;
}

export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

export function pickRandom<T>(items: readonly T[]): T | undefined {
  return items.length === 0 ? undefined : items[randomInt(items.length)];
}

/** The nodes every list names alike (same key, address and port): what several sources agree on. */
export function agreedNodes(lists: readonly (readonly Snode[])[]): Snode[] {
  if (lists.length === 0) return [];
  const id = (n: Snode) => `${n.ed25519}|${n.ip}|${n.port}|${n.x25519 ?? ''}`;
  const others = lists.slice(1).map((list) => new Set(list.map(id)));
  return lists[0]!.filter((n) => others.every((set) => set.has(id(n))));
}
