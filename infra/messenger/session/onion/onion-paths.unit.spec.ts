import { describe, expect, it } from 'vitest';
import type { Snode } from '../snode-pool.ts';
import { NoOnionPathError, OnionPaths } from './onion-paths.ts';

// Path building and rebuilding from the client's pool (facts: session-desktop onionPath.ts).

function pool(size: number, withX25519 = true): Snode[] {
  return Array.from({ length: size }, (_, i) => ({
    ip: `10.0.0.${i + 1}`,
    port: 22_021,
    ed25519: i.toString(16).padStart(64, 'e'),
    ...(withX25519 ? { x25519: i.toString(16).padStart(64, 'c') } : {}),
  }));
}

const keys = (nodes: readonly Snode[]) => nodes.map((n) => n.ed25519);

describe('onion paths', () => {
  it('keeps two paths of three distinct nodes, each with its own guard', () => {
    const paths = new OnionPaths({ pool: () => pool(8) });
    paths.ensure();
    const built = paths.current();
    expect(built).toHaveLength(2);
    for (const path of built) expect(new Set(keys(path)).size).toBe(3);
    expect(new Set(built.flatMap(keys)).size).toBe(6);
    expect(built[0]![0]!.ed25519).not.toBe(built[1]![0]!.ed25519);
  });

  it('never routes a call through its destination', () => {
    const nodes = pool(8);
    const paths = new OnionPaths({ pool: () => nodes });
    for (let round = 0; round < 20; round++) {
      for (const destination of nodes) expect(keys(paths.pick(destination.ed25519).nodes)).not.toContain(destination.ed25519);
    }
  });

  it('with one path holding the destination, makes a path for that call only', () => {
    const nodes = pool(4);
    const paths = new OnionPaths({ pool: () => nodes });
    paths.ensure();
    const [kept] = paths.current();
    const inside = kept![1]!;
    const path = paths.pick(inside.ed25519);
    expect(path.kept).toBe(false);
    expect(keys(path.nodes)).not.toContain(inside.ed25519);
    expect(paths.current()).toEqual([kept]);
  });

  it('uses only nodes with an X25519 key, and says so when the pool is too small', () => {
    const mixed = [...pool(3), ...pool(10, false).slice(3)];
    const paths = new OnionPaths({ pool: () => mixed });
    expect(() => paths.ensure()).toThrow(NoOnionPathError);
    expect(() => paths.ensure()).toThrow('the pool has 3 node(s) with an X25519 key; a path of 3 and a destination outside it need 4');
  });

  it('drops a path at its third failure in a row and builds another without its nodes', () => {
    let now = 1_000;
    const nodes = pool(9);
    const paths = new OnionPaths({ pool: () => nodes, now: () => now });
    paths.ensure();
    const failing = paths.pick('f'.repeat(64));
    const failingKeys = keys(failing.nodes);
    paths.failed(failing);
    paths.succeeded(failing);
    paths.failed(failing);
    paths.failed(failing);
    expect(paths.current().map(keys)).toContainEqual(failingKeys);
    expect(paths.allFailing()).toBe(false);
    paths.failed(failing);
    paths.ensure();
    expect(paths.current()).toHaveLength(2);
    for (const path of paths.current()) for (const key of failingKeys) expect(keys(path)).not.toContain(key);
  });

  it('leaves the nodes of a dropped path out for a while, then uses them again', () => {
    let now = 1_000;
    const paths = new OnionPaths({ pool: () => pool(7), now: () => now });
    paths.ensure();
    const failing = paths.pick('f'.repeat(64));
    for (let i = 0; i < 3; i++) paths.failed(failing);
    paths.ensure();
    expect(paths.current()).toHaveLength(1);
    expect(paths.current().flatMap(keys)).not.toContain(failing.nodes[0]!.ed25519);
    now += 31 * 60_000;
    paths.ensure();
    expect(paths.current()).toHaveLength(2);
  });

  it('says when every kept path failed its last call', () => {
    const paths = new OnionPaths({ pool: () => pool(6) });
    paths.ensure();
    const a = paths.pick('f'.repeat(64));
    paths.failed(a);
    expect(paths.allFailing()).toBe(false);
    const other = paths.pick('f'.repeat(64), new Set(keys(a.nodes)));
    paths.failed(other);
    expect(paths.allFailing()).toBe(true);
    paths.succeeded(other);
    expect(paths.allFailing()).toBe(false);
  });

  it('replaces a node the network does not know in its path at once', () => {
    const nodes = pool(8);
    const paths = new OnionPaths({ pool: () => nodes });
    paths.ensure();
    const before = paths.current();
    const unknown = before[0]![1]!.ed25519;
    expect(paths.unknownNode(unknown)).toBe(true);
    const after = paths.current();
    expect(after[0]![0]).toEqual(before[0]![0]);
    expect(keys(after[0]!)).not.toContain(unknown);
    expect(new Set(keys(after[0]!)).size).toBe(3);
    expect(after[1]).toEqual(before[1]);
    expect(paths.unknownNode('d'.repeat(64))).toBe(false);
  });

  it('drops a path whose node left the pool', () => {
    let nodes = pool(8);
    const paths = new OnionPaths({ pool: () => nodes });
    paths.ensure();
    const gone = paths.current()[0]![2]!.ed25519;
    nodes = nodes.filter((n) => n.ed25519 !== gone);
    paths.ensure();
    expect(paths.current().flatMap(keys)).not.toContain(gone);
  });
});
