/**
 * `relay signal link`: provisions a new Signal identity for an app-messenger by linking signal-cli
 * as a device of an existing Signal account. signal-cli's `startLink` gives a `sgnl://linkdevice`
 * URI, shown as a QR code in the terminal; the operator scans it with the Signal app (Settings →
 * Linked devices → Link new device); `finishLink` returns once the phone agreed, and the linked
 * account is bound to the app-messenger as with `relay signal bind`.
 */
import { renderUnicodeCompact } from 'uqr';
import type { EventStore } from '../../infra/event-store/port.ts';
import { SIGNAL_ERROR_CODES, SignalDaemonError, type SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { bindSignalAccount, refusalToBind, type BindOutcome } from './signal-bind.ts';

export type LinkOutcome = { readonly ok: true; readonly account: string } | { readonly ok: false; readonly reason: string };

/**
 * What a failed startLink or finishLink means, in an operator's words. signal-cli answers both
 * with `Link request error: <cause>` (its I/O error, code -3) when its own connection to Signal's
 * servers failed: `Connection closed!` is what it says when it cannot reach them at all. Other
 * errors are left as they are.
 */
export const linkFailureReason = (error: unknown): string | undefined =>
  error instanceof SignalDaemonError && error.code === SIGNAL_ERROR_CODES.ioError
    ? `signal-cli's daemon could not reach Signal's servers (it answered "${error.message}"): ` +
      'the machine it runs on must reach chat.signal.org over HTTPS (port 443; check its network, firewall or proxy), then try again'
    : undefined;

/** Calls signal-cli; a failure that says what to do becomes the outcome, any other is thrown. */
const attempt = async <T>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; reason: string }> => {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    const reason = linkFailureReason(error);
    if (reason === undefined) throw error;
    return { ok: false, reason };
  }
};

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
  const started = await attempt(() => deps.rpc.call('startLink') as Promise<{ deviceLinkUri?: unknown } | null>);
  if (!started.ok) return started;
  const uri = started.value?.deviceLinkUri;
  if (typeof uri !== 'string' || !LINK_URI.test(uri)) return { ok: false, reason: 'signal-cli answered startLink without a sgnl://linkdevice URI' };
  deps.show(linkInstructions(uri));
  const finished = await attempt(
    () => deps.rpc.call('finishLink', { deviceLinkUri: uri, deviceName: request.deviceName }, { timeoutMs: request.timeoutMs }) as Promise<{ number?: unknown; aci?: unknown } | null>,
  );
  if (!finished.ok) return finished;
  const linked = finished.value;
  const account = typeof linked?.number === 'string' ? linked.number : typeof linked?.aci === 'string' ? linked.aci : undefined;
  if (!account) return { ok: false, reason: 'signal-cli answered finishLink without the linked account' };
  const bound: BindOutcome = await bindSignalAccount(deps, { appMessengerId: request.appMessengerId, account, now: request.now() });
  return bound.ok ? { ok: true, account } : { ok: false, reason: `linked ${account}, but could not bind it: ${bound.reason}` };
};
