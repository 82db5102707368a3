import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { MAX_PER_APP, MAX_TOTAL } from './entries.ts';
import { MessageLogProjection } from './message-log-projection.ts';

let position = 0n;
const event = (type: string, streamName: string, data: Record<string, unknown>, at = '2026-01-02T03:00:00.000Z'): RecordedEvent => ({
  id: `e${++position}`,
  type,
  data,
  metadata: { actor: 'test' },
  streamName,
  streamVersion: 1n,
  globalPosition: position,
  recordedAt: new Date(at),
});
const t = (s: number) => new Date(Date.parse('2026-01-02T03:00:00.000Z') + s * 1000).toISOString();
const created = event('AppCreated', 'app-app_1', { appId: 'app_1', userId: 'usr_1' });
const accepted = (ids: string[], at = t(0)) =>
  event('MessagesAccepted', 'sendbatch-b1', { batchId: 'b1', messages: ids.map((messageId) => ({ messageId, appId: 'app_1', messenger: 'signal', keyId: 'k1' })), bodies: [{ sealed: 's2:SECRET' }], acceptedAt: at });

describe('the message log', () => {
  it('follows an outbound message from accepted through a failed attempt to delivered, with its steps and no body', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(accepted(['m1']));
    log.apply(event('DeliveryAttemptFailed', 'outbound-m1', { messageId: 'm1', appId: 'app_1', attempt: 1, reason: 'timeout', failedAt: t(1), retry: { attempt: 2, dueAt: t(2) } }));
    expect(log.forApp('usr_1', 'app_1')!.messages[0]).toMatchObject({ status: 'failed', reason: 'timeout', attempts: 1 });
    log.apply(event('MessageDelivered', 'outbound-m1', { messageId: 'm1', appId: 'app_1', attempt: 2, deliveredAt: t(2) }));
    const view = log.forApp('usr_1', 'app_1')!;
    expect(view.messages).toEqual([
      {
        messageId: 'm1', direction: 'outbound', messenger: 'signal', status: 'delivered', reason: null, at: t(0), updatedAt: t(2), attempts: 2, keyId: 'k1',
        steps: [{ at: t(0), what: 'accepted' }, { at: t(1), what: 'attempt-failed', attempt: 1, reason: 'timeout', dueAt: t(2) }, { at: t(2), what: 'delivered', attempt: 2 }],
      },
    ]);
    expect(JSON.stringify(log.snapshot())).not.toContain('SECRET');
    expect(log.forApp('usr_2', 'app_1')).toBeUndefined();
  });

  it('filters by status and messenger, newest first', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(accepted(['m1', 'm2']));
    log.apply(event('MessageAbandoned', 'outbound-m2', { messageId: 'm2', appId: 'app_1', attempts: 1, reason: 'bad contact', abandonedAt: t(1) }));
    log.apply(event('InboundMessageReceived', 'inbound-i1', { messageId: 'i1', appId: 'app_1', messenger: 'session', keyId: 'k9', sealed: 's2:x', receivedAt: t(3) }));
    expect(log.forApp('usr_1', 'app_1')!.messages.map((m) => m.messageId)).toEqual(['i1', 'm2', 'm1']);
    expect(log.forApp('usr_1', 'app_1', { status: 'abandoned' })!.messages.map((m) => [m.messageId, m.reason])).toEqual([['m2', 'bad contact']]);
    expect(log.forApp('usr_1', 'app_1', { messenger: 'session' })!.messages.map((m) => m.status)).toEqual(['received']);
  });

  it('marks inbound messages picked up when their key is forgotten as finished, expired on retention', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(event('InboundMessageReceived', 'inbound-i1', { messageId: 'i1', appId: 'app_1', messenger: 'signal', keyId: 'k1', receivedAt: t(0) }));
    log.apply(event('InboundMessageReceived', 'inbound-i2', { messageId: 'i2', appId: 'app_1', messenger: 'signal', keyId: 'k2', receivedAt: t(0) }));
    log.apply(event('BodiesForgotten', 'shred-s1', { keys: [{ keyId: 'k1', appId: 'app_1', reason: 'finished' }, { keyId: 'k2', appId: 'app_1', reason: 'retention' }], forgottenAt: t(5) }));
    expect(log.forApp('usr_1', 'app_1')!.messages.map((m) => [m.messageId, m.status])).toEqual([['i2', 'expired'], ['i1', 'polled']]);
  });

  it('marks inbound messages polled at once from a poll’s claim on Kafka (a topic prefix too)', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(event('InboundMessageReceived', 'inbound-i1', { messageId: 'i1', appId: 'app_1', messenger: 'signal', keyId: 'k1', receivedAt: t(0) }));
    log.apply(event('RecordsPopped', 'popcursor-staging-inbound.app_1', { topic: 'staging-inbound.app_1', ids: ['i1'] }));
    expect(log.forApp('usr_1', 'app_1')!.messages[0]).toMatchObject({ status: 'polled' });
  });

  it('keeps an app’s webhook attempts, failing since the first failure in a row, ok again after a success', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(event('InboundMessageReceived', 'inbound-i1', { messageId: 'i1', appId: 'app_1', messenger: 'signal', keyId: 'k1', receivedAt: t(0) }));
    const attempt = (n: number, ok: boolean) => event('InboundWebhookAttempted', 'inbound-i1', { messageId: 'i1', appId: 'app_1', attempt: n, ok, status: ok ? 200 : 500, reason: ok ? null : 'The webhook answered 500', durationMs: 7, attemptedAt: t(n) });
    log.apply(attempt(1, false));
    log.apply(attempt(2, false));
    let view = log.forApp('usr_1', 'app_1')!;
    expect(view.webhook).toMatchObject({ state: 'failing', failingSince: t(1), failuresInARow: 2 });
    expect(view.messages[0]).toMatchObject({ status: 'received', attempts: 2, reason: 'The webhook answered 500' });
    log.apply(attempt(3, true));
    view = log.forApp('usr_1', 'app_1')!;
    expect(view.webhook).toMatchObject({ state: 'ok', failingSince: null, failuresInARow: 0 });
    expect(view.webhook.attempts.map((a) => [a.attempt, a.status, a.durationMs])).toEqual([[3, 200, 7], [2, 500, 7], [1, 500, 7]]);
    expect(view.messages[0]).toMatchObject({ status: 'delivered', attempts: 3 });
  });

  it('holds at most MAX_PER_APP messages of an app, drops a deleted app, and a snapshot restores the same log', () => {
    const log = new MessageLogProjection();
    log.apply(created);
    log.apply(accepted(Array.from({ length: MAX_PER_APP + 5 }, (_, i) => `m${i}`)));
    expect(log.forApp('usr_1', 'app_1')!.kept).toBe(MAX_PER_APP);
    expect(log.forApp('usr_1', 'app_1')!.messages.at(-1)!.messageId).toBe('m5');
    const copy = new MessageLogProjection();
    copy.restore(JSON.parse(JSON.stringify(log.snapshot())));
    expect(copy.forApp('usr_1', 'app_1')).toEqual(log.forApp('usr_1', 'app_1'));
    log.apply(event('AppDeleted', 'app-app_1', { appId: 'app_1', userId: 'usr_1' }));
    expect(log.forApp('usr_1', 'app_1')).toBeUndefined();
    expect(log.size).toBe(0);
  });

  it('holds at most MAX_TOTAL messages in all: the oldest of the app quiet the longest go first, also after a restore', () => {
    const log = new MessageLogProjection();
    const apps = MAX_TOTAL / MAX_PER_APP + 2;
    // Apps with no message at all, made first: they stand before every app with messages.
    for (let i = 0; i < 5_000; i++) log.apply(event('AppCreated', `app-idle_${i}`, { appId: `idle_${i}`, userId: 'usr_1' }));
    for (let a = 0; a < apps; a++) log.apply(event('AppCreated', `app-app_${a}`, { appId: `app_${a}`, userId: 'usr_1' }));
    const fill = (a: number, from: number, count: number) =>
      log.apply(event('MessagesAccepted', `sendbatch-b${a}-${from}`, { batchId: `b${a}`, messages: Array.from({ length: count }, (_, i) => ({ messageId: `a${a}m${from + i}`, appId: `app_${a}`, messenger: 'signal', keyId: 'k1' })), bodies: [], acceptedAt: t(a) }));
    for (let a = 0; a < apps; a++) fill(a, 0, MAX_PER_APP);
    expect(log.size).toBe(MAX_TOTAL);
    expect(log.forApp('usr_1', 'app_0')!.kept).toBe(0);
    expect(log.forApp('usr_1', 'app_1')!.kept).toBe(0);
    expect(log.forApp('usr_1', 'app_2')!.kept).toBe(MAX_PER_APP);
    const copy = new MessageLogProjection();
    copy.restore(JSON.parse(JSON.stringify(log.snapshot())));
    for (const model of [log, copy]) {
      model.apply(event('MessagesAccepted', 'sendbatch-late', { batchId: 'late', messages: [{ messageId: 'late', appId: 'app_0', messenger: 'signal', keyId: 'k1' }], bodies: [], acceptedAt: t(999) }));
      expect(model.size).toBe(MAX_TOTAL);
      expect(model.forApp('usr_1', 'app_2')!.kept).toBe(MAX_PER_APP - 1);
      expect(model.forApp('usr_1', 'app_0')!.kept).toBe(1);
    }
  });
});
