/**
 * The Signal connector on the fake signal-cli daemon, over either transport: the connector
 * contract's fixture and the Signal suites' set-up.
 */
import type { ConnectorFixture, HandedToMessenger } from '../contracts/messenger-connector.contract.ts';
import { eventually } from './eventually.ts';
import { FakeSignalCli, directEnvelope, groupEnvelope } from './fake-signal-cli.ts';
import { HttpSignalRpc } from '../../infra/messenger/signal/http-signal-rpc.ts';
import { SignalConnector, recipientOf } from '../../infra/messenger/signal/signal-connector.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { TcpSignalRpc } from '../../infra/messenger/signal/tcp-signal-rpc.ts';

export type Transport = 'http' | 'tcp';

export const BOT = '+15550009999';
export const GROUP = 'Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=';
const UUID_OF: Record<string, string> = {};
const uuidOf = (contactId: string) => (UUID_OF[contactId] ??= crypto.randomUUID());

export const quietLog = { warn: () => undefined, error: () => undefined };

export const rpcFor = (transport: Transport, fake: FakeSignalCli, timeoutMs = 5_000): SignalRpc =>
  transport === 'http'
    ? new HttpSignalRpc({ url: fake.httpUrl, timeoutMs, reconnect: { minMs: 50, maxMs: 200 } })
    : new TcpSignalRpc({ host: '127.0.0.1', port: fake.tcpPort, timeoutMs, reconnect: { minMs: 50, maxMs: 200 } });

/** As if `contactId` (a number, or an ACI for a contact who hides their number) wrote to the bot. */
export const envelopeFrom = (contactId: string, text: string, timestamp: number, groupId?: string) => {
  const source = contactId.startsWith('+') ? { number: contactId, uuid: uuidOf(contactId) } : { uuid: contactId };
  return groupId ? groupEnvelope(source, groupId, text, timestamp) : directEnvelope(source, text, timestamp);
};

export const signalFixture = async (transport: Transport): Promise<ConnectorFixture & { fake: FakeSignalCli }> => {
  const fake = await new FakeSignalCli({ keepAliveMs: 100, shuffleMs: 5 }).start();
  fake.addAccount(BOT);
  const connector = new SignalConnector({ rpc: rpcFor(transport, fake), log: quietLog, retry: { minMs: 10, maxMs: 50 } });
  let clock = 1_700_000_000_000;
  return {
    fake,
    connector,
    messenger: 'signal',
    from: BOT,
    contacts: ['+15550100001', '0f3b2c1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'],
    groupId: GROUP,
    failNext: (contactId, kind) => fake.failSendsTo(recipientOf(contactId), kind === 'transient' ? 'NETWORK_FAILURE' : 'UNREGISTERED_FAILURE'),
    handed: async () =>
      fake.sent.map((sent): HandedToMessenger => ({
        from: sent.account,
        ...(sent.groupId !== undefined ? { groupId: sent.groupId } : { contactId: sent.recipient![0]!.replace(/^u:/, '') }),
        text: sent.message,
      })),
    contactWrites: async ({ contactId, text, groupId }) => {
      await eventually(() => {
        if (fake.listeners === 0) throw new Error('the connector is not listening yet');
      }, 5_000);
      fake.receive(BOT, envelopeFrom(contactId, text, ++clock, groupId));
    },
    teardown: async () => {
      await connector.close();
      await fake.close();
    },
  };
};
