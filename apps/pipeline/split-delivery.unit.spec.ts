import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../infra/errors/unavailable.ts';
import type { DeliveryResult, MessengerConnector, OutboundDelivery } from '../../infra/messenger/port.ts';
import { deliverInParts } from './split-delivery.ts';

/** A connector that answers from a script, one answer per call, and keeps what it was handed. */
const scripted = (...answers: Array<DeliveryResult | Error>) => {
  const handed: string[] = [];
  const connector: MessengerConnector = {
    messenger: 'signal',
    deliver: async (delivery: OutboundDelivery) => {
      handed.push(delivery.text);
      const answer = answers.shift() ?? { ok: true };
      if (answer instanceof Error) throw answer;
      return answer;
    },
    listen: async () => undefined,
    close: async () => undefined,
  };
  return { connector, handed };
};

const long = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' '); // 3 parts at signal's 2000
const delivery = { messageId: 'm1', from: '+15550009999', contactId: '+15550100001', text: long };

describe('deliverInParts', () => {
  it('sends the numbered parts in order and says how many', async () => {
    const { connector, handed } = scripted();
    expect(await deliverInParts(connector, delivery, 0)).toEqual({ ok: true, parts: 3 });
    expect(handed.map((t) => t.slice(0, 6))).toEqual(['(1/3) ', '(2/3) ', '(3/3) ']);
  });

  it('sends a message within the limit as it is', async () => {
    const { connector, handed } = scripted();
    expect(await deliverInParts(connector, { ...delivery, text: 'short' }, 0)).toEqual({ ok: true });
    expect(handed).toEqual(['short']);
  });

  it('reports the parts delivered when a later part fails, and a retry goes on from there', async () => {
    const first = scripted({ ok: true }, { ok: false, permanent: false, reason: 'network' });
    expect(await deliverInParts(first.connector, delivery, 0)).toEqual({ ok: false, permanent: false, reason: 'Part 2 of 3: network', partsDelivered: 1 });
    const retry = scripted();
    expect(await deliverInParts(retry.connector, delivery, 1)).toEqual({ ok: true, parts: 3 });
    expect(retry.handed.map((t) => t.slice(0, 6))).toEqual(['(2/3) ', '(3/3) ']);
  });

  it('lets an unavailable daemon wait before the first part of the attempt, and records the progress after it', async () => {
    await expect(deliverInParts(scripted(new UnavailableError('down')).connector, delivery, 0)).rejects.toBeInstanceOf(UnavailableError);
    expect(await deliverInParts(scripted({ ok: true }, new UnavailableError('down')).connector, delivery, 0)).toEqual({
      ok: false,
      permanent: false,
      reason: 'Part 2 of 3: down',
      partsDelivered: 1,
    });
  });
});
