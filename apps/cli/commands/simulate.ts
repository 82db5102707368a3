import { isMessenger, MESSENGERS, type Messenger } from '../../../domain/shared/messengers.ts';
import { contactRejectionOf } from '../../../infra/messenger/messenger-rules.ts';
import { SimulatorConnector } from '../../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../../infra/messenger/simulator/simulator-store.ts';
import { inboundDepsOf, receiveInbound, type ReceiveResult } from '../../pipeline/inbound-receiver.ts';
import type { RelayContext } from '../../services/context.ts';
import { newCodeAttemptLimiter } from '../../pipeline/code-commands.ts';

export const parseMessenger = (value: string): Messenger => {
  if (!isMessenger(value)) throw new Error(`Invalid messenger. Must be one of: ${MESSENGERS.join(', ')}`);
  return value;
};

/**
 * A contact id the messenger would send from, by the rule its connectors check before a delivery
 * (messenger-rules.ts): a message from any other could be polled, but the bot's reply to it would
 * fail, so it is refused here at once.
 */
export const parseContact = (messenger: Messenger, contactId: string): string => {
  const rejection = contactRejectionOf(messenger, contactId);
  if (rejection) throw new Error(`${rejection}, got --contact ${JSON.stringify(contactId)} (no ${messenger} contact writes from such an id, and a reply to it would fail)`);
  return contactId;
};

/**
 * As if `contactId` wrote to the app's bot identity on `messenger`: the simulator connector
 * reports it and the gateway records it, in this process. A running server publishes it to the
 * app's inbound queue; one started later does the same from the event history.
 */
export const simulateInbound = async (
  ctx: RelayContext,
  input: { appId: string; messenger: Messenger; contactId: string; text: string; groupId?: string; timestamp?: number },
): Promise<ReceiveResult> => {
  const appMessenger = ctx.models.apps.appMessengerOf(input.appId, input.messenger);
  if (!appMessenger) throw new Error(`App ${input.appId} has no ${input.messenger} messenger`);
  if (appMessenger.address === null) throw new Error(`The ${input.messenger} identity of app ${input.appId} is still being provisioned`);
  const store = new SimulatorStore(ctx.config.dataDir);
  const connector = new SimulatorConnector(input.messenger, store);
  let result: ReceiveResult | undefined;
  const codeAttempts = newCodeAttemptLimiter(ctx.limits);
  try {
    await connector.listen(async (message) => {
      result = await receiveInbound(inboundDepsOf(ctx, codeAttempts), message);
    });
    await connector.inject({
      to: appMessenger.address,
      contactId: input.contactId,
      text: input.text,
      ...(input.groupId !== undefined ? { groupId: input.groupId } : {}),
      ...(input.timestamp !== undefined ? { timestamp: input.timestamp } : {}),
    });
  } finally {
    codeAttempts.close();
    await connector.close();
    store.close();
  }
  return result!;
};
