/**
 * `relay session-messenger import|export`: an operator's Session account as the bot identity of a
 * Session app-messenger (Relay's own Session client, SESSION_NETWORK=on), and the recovery phrase
 * of a bot identity for the operator's backup. The seed is the whole identity: it is kept sealed
 * in the history (apps/boot/session-identities.ts), printed only on stdout by `export`, and never
 * logged.
 */
import type { EventStore } from '../../../infra/event-store/port.ts';
import { identityFromSeed, seedFromHex, SessionIdError } from '../../../infra/messenger/session/identity.ts';
import type { SessionIdentityStore } from '../../../infra/messenger/session/identity-store.ts';
import { MnemonicError, mnemonicToSeed, seedToMnemonic } from '../../../infra/messenger/session/mnemonic.ts';
import type { SessionConnector } from '../../../infra/messenger/session/session-connector.ts';
import { SessionIdentityTakenError } from '../../../infra/messenger/session/session-errors.ts';
import type { AppsProjection } from '../../../projections/apps/apps-projection.ts';
import { recordBotAddress } from '../../commands/record-bot-address.ts';

export type ImportOutcome = { readonly ok: true; readonly sessionId: string; readonly imported: 'now' | 'already' } | { readonly ok: false; readonly reason: string };

/** What the operator gave: a 13-word recovery phrase or a 32-hex-character seed. */
export type SessionSecret = { readonly mnemonic: string } | { readonly seed: string };

const seedOfSecret = (secret: SessionSecret): Buffer | string => {
  try {
    return 'seed' in secret ? seedFromHex(secret.seed.trim()) : mnemonicToSeed(secret.mnemonic);
  } catch (error) {
    if (error instanceof MnemonicError || error instanceof SessionIdError) return error.message;
    throw error;
  }
};

/** Why this app-messenger cannot take the Session identity `sessionId`, or undefined when it can. */
export const refusalToImport = (apps: AppsProjection, appMessengerId: string, sessionId: string): string | undefined => {
  const appMessenger = apps.appMessenger(appMessengerId);
  if (!appMessenger) return `No app-messenger ${appMessengerId}`;
  if (appMessenger.messenger !== 'session') return `The app-messenger ${appMessengerId} is on ${appMessenger.messenger}, not session`;
  if (appMessenger.address !== null && appMessenger.address !== sessionId)
    return (
      `The app-messenger ${appMessengerId} already has the Session identity ${appMessenger.address}: an app-messenger keeps its identity ` +
      '(contacts write to it). Import before Relay makes one: run Relay with SESSION_IDENTITIES=import, then create the app'
    );
  const holder = apps.byBotAddress('session', sessionId);
  if (holder && holder.id !== appMessengerId) return `${sessionId} is already the identity of the app-messenger ${holder.id}`;
  return undefined;
};

/**
 * Makes the Session account of `secret` the bot identity of an app-messenger that has none yet (or
 * has this one): the connector keeps its seed, then the Session ID is recorded as the
 * app-messenger's address, which makes it active, as `relay signal bind` does.
 */
export const importSessionIdentity = async (
  deps: { readonly store: EventStore; readonly apps: AppsProjection; readonly connector: Pick<SessionConnector, 'importIdentity'> },
  request: { readonly appMessengerId: string; readonly secret: SessionSecret; readonly now: Date },
): Promise<ImportOutcome> => {
  const seed = seedOfSecret(request.secret);
  if (typeof seed === 'string') return { ok: false, reason: seed };
  const { sessionId } = identityFromSeed(seed);
  const { appMessengerId } = request;
  const refusal = refusalToImport(deps.apps, appMessengerId, sessionId);
  if (refusal) return { ok: false, reason: refusal };
  try {
    await deps.connector.importIdentity(appMessengerId, seed.toString('hex'));
  } catch (error) {
    if (error instanceof SessionIdentityTakenError) return { ok: false, reason: error.message };
    throw error;
  }
  const appMessenger = deps.apps.appMessenger(appMessengerId)!;
  if (appMessenger.address === sessionId) return { ok: true, sessionId, imported: 'already' };
  const recorded = await recordBotAddress(deps.store, { appId: appMessenger.appId, appMessengerId, address: sessionId, now: request.now });
  return recorded.ok ? { ok: true, sessionId, imported: 'now' } : recorded;
};

export type ExportOutcome = { readonly ok: true; readonly sessionId: string; readonly mnemonic: string } | { readonly ok: false; readonly reason: string };

/** The recovery phrase of the Session identity Relay keeps for an app-messenger. */
export const exportSessionIdentity = async (deps: { readonly identities: Pick<SessionIdentityStore, 'seedOf'> }, appMessengerId: string): Promise<ExportOutcome> => {
  const seed = await deps.identities.seedOf(appMessengerId);
  if (!seed) return { ok: false, reason: `Relay keeps no Session identity for the app-messenger ${appMessengerId} (a Session app-messenger gets one on the Session network, SESSION_NETWORK=on)` };
  return { ok: true, sessionId: identityFromSeed(seed).sessionId, mnemonic: seedToMnemonic(seed) };
};
