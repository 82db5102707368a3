/**
 * The contract every messenger connector passes (the simulator, Signal through signal-cli, SimpleX
 * through simplex-chat, Session on Relay's own client): what the delivery worker and the inbound
 * gateway rely on. A messenger without groups passes it with `{ groups: false }`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWithdrawnError, type InboundFromContact, type Messenger, type MessengerConnector } from '../../infra/messenger/port.ts';
import { displayLimitOf } from '../../infra/messenger/messenger-rules.ts';
import { eventually } from '../support/eventually.ts';

export interface HandedToMessenger {
  readonly from: string;
  readonly contactId?: string;
  readonly groupId?: string;
  readonly text: string;
}

export interface ConnectorFixture {
  readonly connector: MessengerConnector;
  readonly messenger: Messenger;
  /** A bot identity the connector can send from (an app-messenger's address). */
  readonly from: string;
  /** Two contacts in the messenger's format. */
  readonly contacts: readonly [string, string];
  /** A group the bot is a member of, in the messenger's id format. */
  readonly groupId: string;
  /** Makes the messenger fail the next delivery to `contactId` the way it does when it is down (transient) or the contact does not exist (permanent). */
  failNext(contactId: string, kind: 'transient' | 'permanent'): void;
  /** What the messenger was handed so far, oldest first. */
  handed(): Promise<HandedToMessenger[]>;
  /** As if `contactId` wrote `text` to the bot identity `from` (in `groupId` when given). */
  contactWrites(message: { contactId: string; text: string; groupId?: string }): Promise<void>;
  teardown(): Promise<void>;
}

export interface ContractOptions {
  /**
   * Whether the messenger has groups Relay uses (default true). Without (Session: Relay's client
   * has none), the two group cases are skipped, and the connector's own spec shows what a group
   * delivery does instead.
   */
  readonly groups?: boolean;
}

export const messengerConnectorContract = (name: string, makeFixture: () => Promise<ConnectorFixture>, options: ContractOptions = {}) => {
  const groups = options.groups ?? true;
  describe(`MessengerConnector contract: ${name}`, () => {
    let f: ConnectorFixture;
    let nextId = 0;
    const delivery = (contactId: string, text: string, groupId?: string) => ({
      messageId: `contract-${++nextId}`,
      from: f.from,
      contactId,
      text,
      ...(groupId !== undefined ? { groupId } : {}),
    });

    beforeEach(async () => {
      f = await makeFixture();
    });
    afterEach(async () => {
      await f.teardown();
    });

    it('delivers a direct message from the bot identity to the contact', async () => {
      expect(await f.connector.deliver(delivery(f.contacts[0], 'hello there'))).toEqual({ ok: true });
      expect(await f.handed()).toEqual([{ from: f.from, contactId: f.contacts[0], text: 'hello there' }]);
    });

    it.skipIf(!groups)('delivers a reply to a group message into the group', async () => {
      expect(await f.connector.deliver(delivery(f.contacts[0], 'to the group', f.groupId))).toEqual({ ok: true });
      const handed = await f.handed();
      expect(handed).toHaveLength(1);
      expect(handed[0]).toMatchObject({ from: f.from, groupId: f.groupId, text: 'to the group' });
    });

    it('hands nothing over once the delivery says its record is no longer held (a process frozen before its hand-off), and rejects with DeliveryWithdrawnError', async () => {
      await expect(f.connector.deliver({ ...delivery(f.contacts[0], 'not mine any more'), stillHeld: () => false })).rejects.toThrow(DeliveryWithdrawnError);
      expect(await f.handed()).toEqual([]);
    });

    it("fails a contact id outside the messenger's formats permanently, without handing it over or repeating it", async () => {
      const contactId = 'not a contact id 12345';
      const result = await f.connector.deliver(delivery(contactId, 'x'));
      expect(result).toMatchObject({ ok: false, permanent: true });
      expect(result.ok ? '' : result.reason).toMatch(new RegExp(`^Invalid contactId for ${f.messenger}: expected `));
      expect(JSON.stringify(result)).not.toContain(contactId);
      expect(await f.handed()).toEqual([]);
    });

    it("takes a message of exactly the display limit in characters (not UTF-16 units) and fails one character more permanently", async () => {
      const limit = displayLimitOf(f.messenger);
      expect(await f.connector.deliver(delivery(f.contacts[0], '😀'.repeat(limit)))).toEqual({ ok: true });
      expect(await f.connector.deliver(delivery(f.contacts[0], 'a'.repeat(limit + 1)))).toEqual({
        ok: false,
        permanent: true,
        reason: `Message exceeds the ${f.messenger} limit of ${limit} characters`,
      });
      expect(await f.handed()).toHaveLength(1);
    });

    it("reports the messenger's transient failure as one to retry, and the retry goes through", async () => {
      f.failNext(f.contacts[1], 'transient');
      const failed = await f.connector.deliver(delivery(f.contacts[1], 'try again'));
      expect(failed).toMatchObject({ ok: false, permanent: false });
      expect(JSON.stringify(failed)).not.toContain(f.contacts[1]);
      expect(await f.connector.deliver(delivery(f.contacts[1], 'try again'))).toEqual({ ok: true });
    });

    it("reports the messenger's permanent refusal as final, without the contact id in the reason", async () => {
      f.failNext(f.contacts[1], 'permanent');
      const failed = await f.connector.deliver(delivery(f.contacts[1], 'nobody here'));
      expect(failed).toMatchObject({ ok: false, permanent: true });
      expect(JSON.stringify(failed)).not.toContain(f.contacts[1]);
    });

    it.skipIf(!groups)('hands on what contacts write, direct and in a group, addressed to the bot identity', async () => {
      const received: InboundFromContact[] = [];
      await f.connector.listen(async (message) => {
        received.push(message);
      });
      await f.contactWrites({ contactId: f.contacts[0], text: 'first' });
      await f.contactWrites({ contactId: f.contacts[1], text: 'in the group', groupId: f.groupId });
      await eventually(() => expect(received).toHaveLength(2), 10_000);
      expect(received[0]).toMatchObject({ messenger: f.messenger, to: f.from, contactId: f.contacts[0], text: 'first' });
      expect(received[0]!.groupId).toBeUndefined();
      expect(received[1]).toMatchObject({ messenger: f.messenger, to: f.from, contactId: f.contacts[1], text: 'in the group', groupId: f.groupId });
    });

    it.skipIf(groups)('hands on what contacts write, addressed to the bot identity (a messenger without groups)', async () => {
      const received: InboundFromContact[] = [];
      await f.connector.listen(async (message) => {
        received.push(message);
      });
      await f.contactWrites({ contactId: f.contacts[0], text: 'first' });
      await f.contactWrites({ contactId: f.contacts[1], text: 'second' });
      await eventually(() => expect(received).toHaveLength(2), 10_000);
      const byText = new Map(received.map((m) => [m.text, m]));
      expect(byText.get('first')).toMatchObject({ messenger: f.messenger, to: f.from, contactId: f.contacts[0], text: 'first' });
      expect(byText.get('second')).toMatchObject({ messenger: f.messenger, to: f.from, contactId: f.contacts[1], text: 'second' });
      expect(received.every((m) => m.groupId === undefined)).toBe(true);
    });
  });
};
