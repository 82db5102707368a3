/**
 * `relay signal link`: provisions a new Signal identity for an app-messenger by linking signal-cli
 * as a device of an existing Signal account. signal-cli's `startLink` gives a `sgnl://linkdevice`
 * URI, shown as a QR code in the terminal; the operator scans it with the Signal app (Settings →
 * Linked devices → Link new device); `finishLink` returns once the phone agreed, and the linked
 * account is bound to the app-messenger as with `relay signal bind`.
 */
import { renderUnicodeCompact } from 'uqr';
import type { EventStore } from '../../../infra/event-store/port.ts';
import type { SignalRpc } from '../../../infra/messenger/signal/signal-rpc.ts';
import type { AppsProjection } from '../../../projections/apps/apps-projection.ts';
import { bindSignalAccount, refusalToBind, type BindOutcome } from './signal-bind.ts';

export type LinkOutcome = { readonly ok: true; readonly account: string } | { readonly ok: false; readonly reason: string };

const LINK_URI = /^sgnl:\/\/linkdevice\?/;

/** The link URI as a QR code a phone can scan from a terminal, with the URI itself below it. */
export const linkInstructions = (uri: string): string =>
  `${renderUnicodeCompact(uri, { border: 2 })}\nScan this with the Signal app (Settings → Linked devices → Link new device), or open:\n${uri}\n`;

export const linkSignalAccount = async (
  deps: { readonly store: EventStore; readonly apps: AppsProjection; readonly rpc: SignalRpc; readonly show: (instructions: string) => void },
  request: { readonly appMessengerId: string; readonly deviceName: string; readonly timeoutMs: number; readonly now: () => Date },
): Promise<LinkOutcome> => {
  const refusal = refusalToBind(deps.apps, request.appMessengerId);
  if (refusal) return { ok: false, reason: refusal };
  const started = (await deps.rpc.call('startLink')) as { deviceLinkUri?: unknown } | null;
  const uri = started?.deviceLinkUri;
  if (typeof uri !== 'string' || !LINK_URI.test(uri)) return { ok: false, reason: 'signal-cli answered startLink without a sgnl://linkdevice URI' };
  deps.show(linkInstructions(uri));
  const linked = (await deps.rpc.call('finishLink', { deviceLinkUri: uri, deviceName: request.deviceName }, { timeoutMs: request.timeoutMs })) as {
    number?: unknown;
    aci?: unknown;
  } | null;
  const account = typeof linked?.number === 'string' ? linked.number : typeof linked?.aci === 'string' ? linked.aci : undefined;
  if (!account) return { ok: false, reason: 'signal-cli answered finishLink without the linked account' };
  const bound: BindOutcome = await bindSignalAccount(deps, { appMessengerId: request.appMessengerId, account, now: request.now() });
  return bound.ok ? { ok: true, account } : { ok: false, reason: `linked ${account}, but could not bind it: ${bound.reason}` };
};
