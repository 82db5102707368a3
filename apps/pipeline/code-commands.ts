import { codeCommandOf } from '../../domain/messenger-code/code.ts';
import { messengerCodeDecider, messengerCodeStreamName, type MessengerCodeState } from '../../domain/messenger-code/decider.ts';
import type { CodeRefusal } from '../../domain/messenger-code/events.ts';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import type { KeyedHash } from '../../infra/crypto/keyed-hash.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { InboundFromContact } from '../../infra/messenger/port.ts';
import type { UsersProjection } from '../../projections/users/users-projection.ts';
import type { Limiter } from '../services/limiter.ts';
import type { Limits } from '../services/limiter.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { newContactKey, sealContact } from '../commands/contact-seal.ts';

export interface CodeCommandDeps {
  readonly store: EventStore;
  readonly sealer: MessageSealer;
  readonly keyedHash: KeyedHash;
  readonly users: Pick<UsersProjection, 'userOfContact'>;
  /** Code attempts per contact (a guess of someone else's code costs a message each, and this many per window). */
  readonly attempts: Limiter;
}

/** Codes one contact may send in `CODE_ATTEMPT_WINDOW_MS`; more are refused, and end the codes they name. */
export const CODE_ATTEMPTS_PER_CONTACT = 10;
export const CODE_ATTEMPT_WINDOW_MS = 10 * 60_000;

/** Code attempts per contact: the context's limits, shared by the instances on PostgreSQL. */
export const newCodeAttemptLimiter = (limits: Pick<Limits, 'limiter'>): Limiter => limits.limiter(CODE_ATTEMPT_WINDOW_MS);

/** What a message did as a code command (for the log; the message itself is recorded and polled either way). */
export type CodeCommandOutcome =
  | { kind: 'none' }
  | { kind: 'throttled' }
  | { kind: 'unknown' }
  | { kind: 'refused'; reason: CodeRefusal }
  | { kind: 'confirmed' }
  | { kind: 'linked'; userId: string; contactLinkId: string }
  /** Confirmed, but the user's stream did not take the link (their contact limit, say). */
  | { kind: 'link-refused'; reason: string };

/** The keyed reference of a contact on a messenger: how a `/signin` finds the user who linked it. */
export const contactRefOf = (keyedHash: KeyedHash, messenger: string, contactId: string) => keyedHash.ref('messenger-contact', `${messenger}\u0000${contactId}`);

/**
 * Acts on `/signin CODE` and `/link CODE` sent to any Relay bot (the interface: such commands are
 * consumed internally and still surface on poll): confirms the code on its stream as sent by this
 * contact (its keyed ref, never the contact id), and for a link code records the contact, sealed,
 * on the user's stream. Both steps are idempotent: the same message seen again after a crash
 * finishes what the first time began.
 */
export const actOnCodeCommand = async (deps: CodeCommandDeps, message: InboundFromContact, appId: string): Promise<CodeCommandOutcome> => {
  if (message.groupId?.trim()) return { kind: 'none' };
  const parsed = codeCommandOf(message.text);
  if (!parsed) return { kind: 'none' };
  const contactRef = contactRefOf(deps.keyedHash, message.messenger, message.contactId);
  // Over its limit, the contact's code is still looked up: an open one is refused and ends (the
  // bot it was sent to saw it), so that nobody else can send it after this contact could not.
  const throttled = !(await deps.attempts.consume(contactRef, 1, CODE_ATTEMPTS_PER_CONTACT)).allowed;
  const codeRef = deps.keyedHash.ref('messenger-code', parsed.code);
  let code: MessengerCodeState = { status: 'none' };
  const now = new Date();
  const confirmed = await handleCommand(
    deps.store,
    messengerCodeStreamName(codeRef),
    messengerCodeDecider,
    (state) => {
      code = state;
      return { type: 'ConfirmMessengerCode' as const, data: { command: parsed.purpose, messenger: message.messenger, contactRef, appId, linkedTo: deps.users.userOfContact(contactRef) ?? null, throttled, now } };
    },
    { actor: 'system:gateway', correlationId: codeRef },
  );
  if (!confirmed.ok) return { kind: throttled ? 'throttled' : 'unknown' };
  const [event] = confirmed.events;
  if (event?.type === 'MessengerCodeRefused') return { kind: 'refused', reason: event.data.reason };
  // Confirmed now, or by this very contact before (the same message again): a link is recorded (once).
  const state = code as MessengerCodeState;
  if (state.status === 'none' || state.purpose !== 'link' || state.userId === null) return { kind: 'confirmed' };
  const userId = state.userId;
  const key = newContactKey(deps.sealer, userId, codeRef);
  const linked = await handleCommand(
    deps.store,
    userStreamName(userId),
    userDecider,
    {
      type: 'LinkMessengerContact',
      data: { contactLinkId: codeRef, messenger: message.messenger, contactRef, keyId: key.id, sealedContact: sealContact(deps.sealer, key.raw, userId, codeRef, message.contactId), now },
    },
    { actor: 'system:gateway', correlationId: codeRef },
    { keys: key.changes },
  );
  if (!linked.ok) return { kind: 'link-refused', reason: linked.error.message };
  return { kind: 'linked', userId, contactLinkId: codeRef };
};
