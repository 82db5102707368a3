import { describe, expect, it } from 'vitest';
import { inboundBinding } from '../../domain/inbound/events.ts';
import { BrokerUnavailableError, type ConsumedRecord, type PopOptions } from '../../infra/broker/port.ts';
import { bodyStrings } from '../../domain/shared/message-body.ts';
import { sealLegacyJson } from '../../test/support/legacy-seal.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import { EventStoreUnavailableError } from '../../infra/event-store/port.ts';
import type { RelayContext } from '../services/context.ts';
import type { InboundRecord } from '../pipeline/queue-records.ts';
import { popRoundRobin } from './poll-messages.ts';

const sealer = createMessageSealer(createSecretBox('33'.repeat(32)));

/** A broker of inbound queues in memory that pops as the port says (accept first), and can be told to fail. */
const fixture = () => {
  const queues = new Map<string, ConsumedRecord[]>();
  const keys = new Map<string, string>();
  const failPops: string[] = [];
  let keysDown = false;
  let forgottenCount = 0;
  let offset = 0n;
  const add = (appId: string, text: string, options: { forget?: boolean; legacy?: boolean } = {}) => {
    const key = sealer.newKey();
    const messageId = `m${offset}`;
    if (!options.forget) keys.set(key.id, key.wrapped);
    const value: InboundRecord = {
      messageId,
      appId,
      appMessengerId: 'am',
      messenger: 'signal',
      keyId: key.id,
      sealed: options.legacy
        ? sealLegacyJson(key.raw, inboundBinding(messageId), { c: '+1555', t: text })
        : sealer.seal(key.raw, inboundBinding(messageId), bodyStrings([{ c: '+1555', t: text }])),
      timestamp: 1,
      isGroupMessage: false,
      isCommand: false,
    };
    const topic = `inbound.${appId}`;
    const list = queues.get(topic) ?? [];
    list.push({ topic, partition: 0, offset: offset++, key: appId, value: JSON.stringify(value), headers: {}, id: messageId, dueAt: undefined, timestamp: 0 });
    queues.set(topic, list);
  };
  const broker = {
    async pop(topic: string, max: number, options?: PopOptions) {
      if (failPops.includes(topic)) throw new BrokerUnavailableError('broker down');
      const list = queues.get(topic) ?? [];
      const taken = list.slice(0, max);
      if (taken.length > 0) await options?.accept?.(taken);
      list.splice(0, taken.length);
      return taken;
    },
  };
  const ctx = {
    broker,
    sealer,
    store: {
      keys: {
        async get(ids: readonly string[]) {
          if (keysDown) throw new EventStoreUnavailableError('store down');
          return new Map(ids.flatMap((id) => (keys.has(id) ? [[id, keys.get(id)!] as const] : [])));
        },
      },
    },
    metrics: { pollForgotten: { inc: () => forgottenCount++ } },
  } as unknown as RelayContext;
  return {
    ctx,
    add,
    queued: (appId: string) => queues.get(`inbound.${appId}`)?.length ?? 0,
    failPop: (appId: string) => failPops.push(`inbound.${appId}`),
    keysDown: () => (keysDown = true),
    forgotten: () => forgottenCount,
  };
};

const texts = (result: { messages: Array<{ content: string }> }) => result.messages.map((m) => m.content).sort();

describe('poll across several apps', () => {
  it('returns what earlier rounds popped when a later round fails, instead of losing it', async () => {
    const f = fixture();
    f.add('a', 'a1');
    for (let i = 1; i <= 5; i++) f.add('b', `b${i}`);
    // Round 1 takes a1, b1, b2 (a is then empty); round 2 asks b again, and b's queue fails.
    let pops = 0;
    const pop = f.ctx.broker.pop.bind(f.ctx.broker);
    (f.ctx.broker as { pop: typeof pop }).pop = async (topic, max, options) => {
      if (++pops > 2) f.failPop('b');
      return pop(topic, max, options);
    };
    const result = await popRoundRobin(f.ctx, ['a', 'b'], 4);
    expect(texts(result)).toEqual(['a1', 'b1', 'b2']);
    expect(result.failure).toBeInstanceOf(BrokerUnavailableError);
    expect(result.keyIds).toHaveLength(3);
    expect(f.queued('b')).toBe(3);
  });

  it('pops nothing when the keys cannot be read, and reports the failure', async () => {
    const f = fixture();
    f.add('a', 'a1');
    f.add('b', 'b1');
    f.keysDown();
    const result = await popRoundRobin(f.ctx, ['a', 'b'], 10);
    expect(result.messages).toEqual([]);
    expect(result.failure).toBeInstanceOf(EventStoreUnavailableError);
    expect([f.queued('a'), f.queued('b')]).toEqual([1, 1]);
  });

  it('a record whose body was forgotten is popped, not returned, and counted; the limit is filled from what remains', async () => {
    const f = fixture();
    f.add('a', 'gone', { forget: true });
    f.add('a', 'a2');
    f.add('a', 'a3');
    const result = await popRoundRobin(f.ctx, ['a'], 2);
    expect(texts(result)).toEqual(['a2', 'a3']);
    expect(result.failure).toBeUndefined();
    expect(f.forgotten()).toBe(1);
    expect(f.queued('a')).toBe(0);
  });

  it('interleaves apps round-robin and returns the contact and text opened', async () => {
    const f = fixture();
    for (const text of ['a1', 'a2']) f.add('a', text);
    for (const text of ['b1', 'b2']) f.add('b', text);
    const result = await popRoundRobin(f.ctx, ['a', 'b'], 4);
    expect(texts(result)).toEqual(['a1', 'a2', 'b1', 'b2']);
    expect(result.messages[0]).toMatchObject({ contactId: '+1555', messenger: 'signal', isGroupMessage: false, isCommand: false });
    expect(result.messages[0]).not.toHaveProperty('groupId');
  });

  it('opens the payloads sealed as JSON (format s1) by Relay 0.1 before s2, beside those sealed now', async () => {
    const f = fixture();
    f.add('a', 'old', { legacy: true });
    f.add('a', 'new');
    const result = await popRoundRobin(f.ctx, ['a'], 2);
    expect(texts(result)).toEqual(['new', 'old']);
    expect(result.messages.map((m) => m.contactId)).toEqual(['+1555', '+1555']);
  });
});
