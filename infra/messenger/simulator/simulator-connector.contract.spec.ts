import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAdministrationContract } from '../../../test/contracts/group-administration.contract.ts';
import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { MESSENGERS } from '../../../domain/shared/messengers.ts';
import { SimulatorConnector, simulatedAddress } from './simulator-connector.ts';
import { SimulatorStore } from './simulator-store.ts';

const CONTACTS = {
  signal: ['+15550100001', '+15550100002'],
  simplex: ['1001', '1002'],
  session: [`05${'a'.repeat(64)}`, `05${'b'.repeat(64)}`],
} as const;

for (const messenger of MESSENGERS) {
  messengerConnectorContract(`simulator (${messenger})`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-simulator-'));
    const store = new SimulatorStore(dir);
    const connector = new SimulatorConnector(messenger, store);
    const from = simulatedAddress(messenger, 'contract-app-messenger');
    return {
      connector,
      messenger,
      from,
      contacts: CONTACTS[messenger],
      groupId: 'group-1',
      failNext: (contactId, kind) =>
        kind === 'transient' ? store.failNext(messenger, contactId, 1, 'Simulated outage') : store.failNext(messenger, contactId, 1, 'Simulated refusal', true),
      handed: async () =>
        store
          .deliveries()
          .filter((d) => d.ok)
          .map((d) => ({ from: d.from, ...(d.groupId === null ? { contactId: d.contactId } : { groupId: d.groupId }), text: d.text })),
      contactWrites: (message) => connector.inject({ to: from, ...message }),
      teardown: async () => {
        await connector.close();
        store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}

for (const messenger of MESSENGERS) {
  groupAdministrationContract(`simulator (${messenger})`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-simulator-groups-'));
    const store = new SimulatorStore(dir);
    const connector = new SimulatorConnector(messenger, store);
    return {
      groups: connector.groups,
      messenger,
      from: simulatedAddress(messenger, 'contract-app-messenger'),
      contacts: CONTACTS[messenger],
      addedStatus: 'joined',
      inviteLinks: messenger !== 'session',
      teardown: async () => {
        await connector.close();
        store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}
