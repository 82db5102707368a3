import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { AppsProjection } from './apps-projection.ts';

let position = 0n;
const recorded = (type: string, data: Record<string, unknown>): RecordedEvent => ({ type, data, streamName: `app-${String(data.appId)}`, position: ++position }) as unknown as RecordedEvent;
const created = (appId: string, userId: string, deliveryType: 'poll' | 'webhook' = 'poll') =>
  recorded('AppCreated', { appId, userId, createdAt: '2026-11-29T00:00:00.000Z', name: appId, status: 'active', deliveryType, webhookUrl: deliveryType === 'webhook' ? 'https://example.com/hook' : null });

describe('the apps read model', () => {
  const fold = (events: RecordedEvent[]) => {
    const model = new AppsProjection();
    for (const event of events) model.apply(event);
    return model;
  };
  const ids = (apps: { id: string }[]) => apps.map((app) => app.id);
  const history = [
    created('a1', 'u1'),
    created('b1', 'u2', 'webhook'),
    created('a2', 'u1', 'webhook'),
    created('a3', 'u1'),
    recorded('AppUpdated', { appId: 'a3', changes: { deliveryType: 'webhook', webhookUrl: 'https://example.com/3' } }),
    recorded('AppUpdated', { appId: 'a2', changes: { deliveryType: 'poll' } }),
    recorded('AppDeleted', { appId: 'a1' }),
  ];

  it("lists a user's apps oldest first, and no other user's, without deleted ones", () => {
    const model = fold(history);
    expect(ids(model.appsOf('u1'))).toEqual(['a2', 'a3']);
    expect(ids(model.appsOf('u2'))).toEqual(['b1']);
    expect(model.appsOf('nobody')).toEqual([]);
  });

  it('lists the apps whose delivery type is webhook as it changes', () => {
    expect(ids(fold(history).webhookApps()).sort()).toEqual(['a3', 'b1']);
  });

  it('answers the same after a restore from its snapshot', () => {
    const model = fold(history);
    const restored = new AppsProjection();
    restored.restore(JSON.parse(JSON.stringify(model.snapshot())));
    expect(ids(restored.appsOf('u1'))).toEqual(['a2', 'a3']);
    expect(ids(restored.webhookApps()).sort()).toEqual(['a3', 'b1']);
    restored.apply(recorded('AppDeleted', { appId: 'a3' }));
    expect(ids(restored.appsOf('u1'))).toEqual(['a2']);
    expect(ids(restored.webhookApps())).toEqual(['b1']);
  });
});
