import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { UsersProjection } from './users-projection.ts';

let position = 0n;
const recorded = (type: string, data: Record<string, unknown>): RecordedEvent =>
  ({ id: `e${++position}`, type, data, metadata: {}, streamName: `user-${String(data.userId)}`, streamVersion: position, globalPosition: position, recordedAt: new Date(0) }) as unknown as RecordedEvent;

describe('users read model: the send tier', () => {
  const users = new UsersProjection();
  users.apply(recorded('UserRegistered', { userId: 'usr_1', email: 'a@example.com', name: 'a', registeredAt: '2026-01-01T00:00:00.000Z' }));

  it('is free until paid time is bought, paid while it lasts, and free again when it lapses', () => {
    expect(users.tierOf('usr_1', Date.parse('2026-01-02T00:00:00.000Z'))).toBe('free');
    users.apply(
      recorded('SubscriptionExtended', {
        userId: 'usr_1', invoiceId: 'inv_1', period: 'monthly', paidFrom: '2026-01-02T00:00:00.000Z', paidUntil: '2026-02-01T00:00:00.000Z', extendedAt: '2026-01-02T00:00:00.000Z',
      }),
    );
    expect(users.tierOf('usr_1', Date.parse('2026-01-31T23:59:59.999Z'))).toBe('paid');
    expect(users.tierOf('usr_1', Date.parse('2026-02-01T00:00:00.000Z'))).toBe('free');
  });

  it('is paid whenever an operator set it so (relay user tier), paid time or not', () => {
    users.apply(recorded('SendTierChanged', { userId: 'usr_1', tier: 'paid', changedAt: '2026-03-01T00:00:00.000Z' }));
    expect(users.tierOf('usr_1', Date.parse('2027-01-01T00:00:00.000Z'))).toBe('paid');
    expect(users.tierOf('usr_unknown')).toBe('free');
  });
});
