import { appDecider, appStreamName } from '../../domain/app/decider.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { handleCommand } from './handle-command.ts';

/**
 * Records `address` as the bot identity of an app-messenger of `appId`, which makes it active: how
 * `relay signal bind` (and `link`) and `relay session-messenger import` end, once they checked it may be.
 */
export const recordBotAddress = async (
  store: EventStore,
  request: { readonly appId: string; readonly appMessengerId: string; readonly address: string; readonly now: Date },
): Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: string }> => {
  const { appMessengerId, address, now } = request;
  const result = await handleCommand(
    store,
    appStreamName(request.appId),
    appDecider,
    { type: 'ProvisionAppMessenger', data: { appMessengerId, address, now } },
    { actor: 'cli' },
  );
  return result.ok ? { ok: true } : { ok: false, reason: result.error.message };
};
