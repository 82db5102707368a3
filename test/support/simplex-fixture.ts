/** The SimpleX connector on the fake simplex-chat: the connector contract's fixture. */
import type { ConnectorFixture, HandedToMessenger } from '../contracts/messenger-connector.contract.ts';
import { eventually } from './eventually.ts';
import { FakeSimplexChat } from './fake-simplex-chat.ts';
import { SimplexConnector } from '../../infra/messenger/simplex/simplex-connector.ts';

export const quietSimplexLog = { warn: () => undefined, error: () => undefined, info: () => undefined };

export const simplexFixture = async (): Promise<ConnectorFixture & { fake: FakeSimplexChat; userId: number }> => {
  const fake = await new FakeSimplexChat().start();
  const connector = new SimplexConnector({ url: fake.url, timeoutMs: 5_000, log: quietSimplexLog, reconnect: { minMs: 50, maxMs: 200 }, retry: { minMs: 10, maxMs: 50 } });
  const from = await connector.provision('am_contract');
  const userId = fake.userIdOfAddress(from)!;
  const contacts = [fake.connect(from, 'alice'), fake.connect(from, 'bob')].map(String) as [string, string];
  const groupId = fake.createGroup(userId);
  const addressOf = (id: number) => (id === userId ? from : `user-${id}`);
  return {
    fake,
    userId,
    connector,
    messenger: 'simplex',
    from,
    contacts,
    groupId: String(groupId),
    failNext: (_contactId, kind) => fake.failNextSend(kind === 'transient' ? 'error/contactNotReady' : 'errorStore/contactNotFound'),
    handed: async () =>
      fake.sent.map((s): HandedToMessenger => ({
        from: addressOf(s.userId),
        ...(s.groupId !== undefined ? { groupId: String(s.groupId) } : { contactId: String(s.contactId) }),
        text: s.text,
      })),
    contactWrites: async ({ contactId, text, groupId }) => {
      await eventually(() => {
        if (fake.listeners === 0) throw new Error('the connector is not listening yet');
      }, 5_000);
      if (groupId !== undefined) fake.memberWrites(Number(groupId), { groupMemberId: 900, memberContactId: Number(contactId) }, text);
      else fake.contactWrites(Number(contactId), text);
    },
    teardown: async () => {
      await connector.close();
      await fake.close();
    },
  };
};
