import { describe, expect, it } from 'vitest';
import { agreedNodes, serviceNodesFrom, swarmFrom } from './snode-pool.ts';

const key = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
const state = (ip: string, n = 1) => ({ public_ip: ip, storage_port: 22021, pubkey_ed25519: key(n), pubkey_x25519: key(n + 100) });
const member = (ip: string, n = 1) => ({ ip, port_https: 22021, pubkey_ed25519: key(n), pubkey_x25519: key(n + 100) });
const strict = { allowPrivate: false };

describe('node addresses from the network', () => {
  // Every form a node list could use to make Relay call into the network it runs in.
  it.each([
    ['loopback', '127.0.0.1'],
    ['this network', '0.1.2.3'],
    ['private 10/8', '10.0.0.5'],
    ['private 172.16/12', '172.20.1.1'],
    ['private 192.168/16', '192.168.1.20'],
    ['link-local', '169.254.169.254'],
    ['shared (CGNAT)', '100.64.0.1'],
    ['documentation', '192.0.2.7'],
    ['benchmarking', '198.18.0.1'],
    ['multicast', '224.0.0.251'],
    ['reserved', '240.0.0.1'],
    ['broadcast', '255.255.255.255'],
  ])('refuses a %s address (%s) in a service-node list and in a swarm answer', (_, ip) => {
    expect(serviceNodesFrom([state(ip)], 10, strict)).toEqual({ nodes: [], refused: 1 });
    expect(swarmFrom({ snodes: [member(ip)] }, 10, strict)).toBeUndefined();
  });

  it('takes a public address, and a loopback one where a test allows it', () => {
    expect(serviceNodesFrom([state('144.76.164.202')], 10, strict).nodes).toHaveLength(1);
    expect(swarmFrom({ snodes: [member('144.76.164.202')] }, 10, strict)).toHaveLength(1);
    expect(serviceNodesFrom([state('127.0.0.1')], 10, { allowPrivate: true }).nodes).toHaveLength(1);
  });
});

describe('agreement', () => {
  it('keeps the nodes every list names alike (key, address, port and X25519 key)', () => {
    const [a, b, c] = [1, 2, 3].map((n) => serviceNodesFrom([state('144.76.164.202', n)], 10, strict).nodes[0]!);
    const moved = { ...b!, ip: '144.76.164.203' };
    expect(agreedNodes([[a!, b!, c!], [c!, b!, a!], [a!, moved, c!]]).map((n) => n.ed25519).sort()).toEqual([a!.ed25519, c!.ed25519].sort());
    expect(agreedNodes([[a!]])).toEqual([a]);
    expect(agreedNodes([])).toEqual([]);
  });
});
