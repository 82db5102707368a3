import path from 'node:path';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { modelLine, rebuildProjections } from '../../apps/cli/commands/projections.ts';
import { startProjectionRunner } from '../../apps/read-models/runner.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { tempDirs } from '../../test/support/temp-dirs.ts';
import { StatisticsProjection } from './statistics-projection.ts';

/** The statistics fed as the read models are (apps/read-models/statistics-model.ts): by a projection runner from a real store, checkpointed, and compared as `relay projections rebuild` compares. */

const log = pino({ level: 'silent' });
const tempDir = tempDirs('relay-statistics-');

const now = Date.now();
const at = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
const app = (appId: string, userId: string) => ({
  type: 'AppCreated',
  data: { appId, userId, name: appId, protocol: ['signal'], status: 'active', deliveryType: 'poll', webhookUrl: null, webhookAuthType: null, webhookAuthSecretEncrypted: null, webhookAuthHeaderName: null, apiKeyId: null, createdAt: at(600) },
});
const batch = (batchId: string, appId: string, messageIds: string[]) => ({
  type: 'MessagesAccepted',
  data: { batchId, credentialId: 'cred_1', userId: 'usr_1', messages: messageIds.map((messageId) => ({ messageId, appId, messenger: 'signal', keyId: 'k1' })), bodies: [], acceptedAt: at(120) },
});
const outcome = (messageId: string, type: 'MessageDelivered' | 'MessageAbandoned') => ({
  type,
  data: type === 'MessageDelivered'
    ? { messageId, appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at(60) }
    : { messageId, appId: 'app_1', messenger: 'signal', attempts: 0, reason: 'gave up', abandonedAt: at(60) },
});

describe('statistics through the projection runner', () => {
  it('follows the store, tells listeners, survives a restart through its snapshot, and rebuilds equal', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'read-models.sqlite.json');
    const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal', pollIntervalMs: 5 });
    try {
      await store.appendToStream('app-app_1', [app('app_1', 'usr_1')]);
      await store.appendToStream('app-app_2', [app('app_2', 'usr_2')]);
      await store.appendToStream('sendbatch-b1', [batch('b1', 'app_1', ['m1', 'm2', 'm3', 'm4'])]);
      await store.appendToStream('sendbatch-b2', [batch('b2', 'app_2', ['n1'])]);

      const first = { statistics: new StatisticsProjection() };
      const runner = await startProjectionRunner(store, [first.statistics], log, { file, everyMs: 60_000 });
      expect(first.statistics.forUser('usr_1', 'hour', now).total.totals).toMatchObject({ accepted: 4, waiting: 4 });

      const heard: unknown[] = [];
      first.statistics.onChange('usr_1', (change) => heard.push(change));
      await store.appendToStream('outbound-m1', [outcome('m1', 'MessageDelivered')]);
      await runner.catchUp();
      await vi.waitFor(() => expect(heard).toEqual([{ userId: 'usr_1', appIds: ['app_1'] }]));
      expect(first.statistics.forApp('usr_1', 'app_1', 'hour', now)!.total.totals).toMatchObject({ accepted: 4, delivered: 1, waiting: 3 });
      await runner.stop();

      // Restarted from the snapshot, then what came after it.
      await store.appendToStream('outbound-m2', [outcome('m2', 'MessageAbandoned')]);
      const second = { statistics: new StatisticsProjection() };
      const resumed = await startProjectionRunner(store, [second.statistics], log, { file, everyMs: 60_000 });
      expect(second.statistics.forApp('usr_1', 'app_1', 'day', now)!.total.totals).toMatchObject({ accepted: 4, delivered: 1, abandoned: 1, waiting: 2 });
      expect(second.statistics.forApp('usr_1', 'app_2', 'day', now)).toBeUndefined();
      await resumed.stop();

      const report = await rebuildProjections(store, () => [new StatisticsProjection()], file);
      expect(report.equal).toBe(true);
      expect(modelLine(report.models.find((m) => m.name === 'statistics')!)).toBe('statistics: equal (2 apps, 2 counters, 1 clock)');
    } finally {
      await store.close();
    }
  });
});
