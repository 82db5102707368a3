import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, inject, it } from 'vitest';
import { brokerContract } from '../../../test/contracts/broker.contract.ts';
import type { EventStore } from '../../event-store/port.ts';
import { createSqliteEventStore } from '../../event-store/sqlite/sqlite-event-store.ts';
import { createEventStorePopCursors } from './event-store-pop-cursors.ts';
import { createKafkaBroker } from './kafka-broker.ts';

const brokers = inject('kafkaBrokers');

if (brokers === '') {
  describe('Broker contract: Kafka', () => it.skip(`skipped: ${inject('kafkaSkipReason')}`));
} else {
  brokerContract('Kafka (kafkajs)', async () => {
    // Pop claims go to an event store that every instance shares, as Relay processes do.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-kafka-broker-'));
    const stores: EventStore[] = [];
    const open = () => {
      const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), pollIntervalMs: 5 });
      stores.push(store);
      return createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store) });
    };
    const broker = open();
    return {
      broker,
      capabilities: { dedupesById: false },
      second: async () => open(),
      teardown: async () => {
        await broker.close();
        for (const store of stores) await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}
