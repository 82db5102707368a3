/**
 * What a `send` of signal-cli means for a delivery: its per-recipient result types, or the
 * daemon's error. Reasons are kept in clear in the history, so they never carry the contact id or
 * the group id (the daemon's own messages do: they are scrubbed).
 */
import { BotIdentityMissingError, type DeliveryResult } from '../port.ts';
import { SIGNAL_ERROR_CODES, SignalDaemonError } from './signal-rpc.ts';

const RESULT_REASONS: Record<string, { permanent: boolean; reason: string }> = {
  UNREGISTERED_FAILURE: { permanent: true, reason: 'The contact is not registered on Signal' },
  IDENTITY_FAILURE: { permanent: true, reason: "The contact's safety number changed and is not trusted by the bot's account" },
  NETWORK_FAILURE: { permanent: false, reason: "Signal's servers could not be reached" },
  RATE_LIMIT_FAILURE: { permanent: false, reason: 'Signal rate-limited the bot account' },
  PROOF_REQUIRED_FAILURE: { permanent: false, reason: 'Signal asks the bot account to solve a challenge before it sends more' },
};

const resultSchema = (value: unknown): Array<{ type: string }> | undefined => {
  if (!value || typeof value !== 'object' || !Array.isArray((value as { results?: unknown }).results)) return undefined;
  return ((value as { results: unknown[] }).results).map((r) => ({ type: String((r as { type?: unknown })?.type ?? 'UNKNOWN') }));
};

/**
 * A direct message is delivered when its one recipient's result is SUCCESS; a group message when
 * any member's is (members who left Signal do not hold the group's messages back), or when the
 * group has no other member.
 */
export const outcomeOfSend = (result: unknown, isGroup: boolean): DeliveryResult => {
  const results = resultSchema(result);
  if (!results) return { ok: false, permanent: false, reason: 'signal-cli answered a send without results' };
  if (results.length === 0 || results.some((r) => r.type === 'SUCCESS')) {
    if (results.length === 0 && !isGroup) return { ok: false, permanent: false, reason: 'signal-cli answered a send without results' };
    return { ok: true };
  }
  // Every recipient failed: a transient failure of any decides (a retry may reach them).
  const failures = results.map((r) => RESULT_REASONS[r.type] ?? { permanent: false, reason: `Signal send failed (${r.type})` });
  return { ok: false, ...(failures.find((f) => !f.permanent) ?? failures[0]!) };
};

const scrub = (text: string, secrets: readonly string[]): string =>
  secrets.filter((s) => s.length > 0).reduce((out, secret) => out.split(secret).join('<contact>'), text);

/** The daemon refused the call: a user error (a recipient or group it does not know) or an untrusted key is permanent. */
export const outcomeOfDaemonError = (error: SignalDaemonError, secrets: readonly string[]): DeliveryResult => {
  if (error.code === SIGNAL_ERROR_CODES.invalidParams && /account does not exist/i.test(error.message))
    throw new BotIdentityMissingError("The bot's Signal account is not on the signal-cli daemon (unlinked or removed)");
  const message = scrub(error.message, secrets).slice(0, 300);
  switch (error.code) {
    case SIGNAL_ERROR_CODES.userError:
      return { ok: false, permanent: true, reason: `signal-cli refused the message: ${message}` };
    case SIGNAL_ERROR_CODES.untrustedKey:
      return { ok: false, permanent: true, reason: RESULT_REASONS.IDENTITY_FAILURE!.reason };
    case SIGNAL_ERROR_CODES.parseError:
    case SIGNAL_ERROR_CODES.invalidRequest:
    case SIGNAL_ERROR_CODES.methodNotFound:
    case SIGNAL_ERROR_CODES.invalidParams:
      return { ok: false, permanent: true, reason: `signal-cli rejected the call (${error.code}): ${message}` };
    default:
      // -3 (I/O), -5 (rate limit, newer signal-cli), -32603 (internal) and codes this Relay does not know.
      return { ok: false, permanent: false, reason: `signal-cli failed to send (${error.code}): ${message}` };
  }
};
