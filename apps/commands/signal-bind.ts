/**
 * `relay signal bind`: makes a Signal account that signal-cli's daemon has (registered with its
 * own register/verify commands, or linked) the bot identity of an app-messenger. The account must
 * be on the daemon and nobody else's identity; an app-messenger keeps the identity it was bound to.
 */
import type { EventStore } from '../../infra/event-store/port.ts';
import { SIGNAL_ACI, SIGNAL_NUMBER } from '../../infra/messenger/messenger-rules.ts';
import { identitiesOfAccounts } from '../../infra/messenger/signal/accounts.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { recordBotAddress } from './record-bot-address.ts';

export type BindOutcome = { readonly ok: true; readonly bound: 'now' | 'already' } | { readonly ok: false; readonly reason: string };

/** Why this app-messenger cannot take a new Signal identity, or undefined when it can. */
export const refusalToBind = (apps: AppsProjection, appMessengerId: string): string | undefined => {
  const appMessenger = apps.appMessenger(appMessengerId);
  if (!appMessenger) return `No app-messenger ${appMessengerId}`;
  if (appMessenger.messenger !== 'signal') return `The app-messenger ${appMessengerId} is on ${appMessenger.messenger}, not signal`;
  if (appMessenger.address !== null) return `The app-messenger ${appMessengerId} already has the Signal identity ${appMessenger.address}`;
  return undefined;
};

export const bindSignalAccount = async (
  deps: { readonly store: EventStore; readonly apps: AppsProjection; readonly rpc: SignalRpc },
  request: { readonly appMessengerId: string; readonly account: string; readonly now: Date },
): Promise<BindOutcome> => {
  const { appMessengerId, account } = request;
  if (!SIGNAL_NUMBER.test(account) && !SIGNAL_ACI.test(account)) return { ok: false, reason: 'The account must be an E.164 number (+15551234567) or, for an account without a number, its ACI' };
  const appMessenger = deps.apps.appMessenger(appMessengerId);
  if (appMessenger?.messenger === 'signal' && appMessenger.address === account) return { ok: true, bound: 'already' };
  const refusal = refusalToBind(deps.apps, appMessengerId);
  if (refusal || !appMessenger) return { ok: false, reason: refusal ?? `No app-messenger ${appMessengerId}` };
  const holder = deps.apps.byBotAddress('signal', account);
  if (holder) return { ok: false, reason: `${account} is already the identity of the app-messenger ${holder.id}` };
  const accounts = identitiesOfAccounts(await deps.rpc.call('listAccounts'));
  if (!accounts.includes(account)) return { ok: false, reason: `signal-cli has no account ${account}: register it with signal-cli, or link one with relay signal link` };
  const recorded = await recordBotAddress(deps.store, { appId: appMessenger.appId, appMessengerId, address: account, now: request.now });
  return recorded.ok ? { ok: true, bound: 'now' } : recorded;
};
