import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { Messenger } from '../shared/messengers.ts';
import type { MessengerCodeCommand } from './commands.ts';
import { ENDING_REFUSALS, type CodePurpose, type CodeRefusal, type MessengerCodeEvent } from './events.ts';

/**
 * A messenger code (`/signin CODE`, `/link CODE`):
 * - it is confirmed by the first contact that sends it with the right command before it expires;
 *   the same message seen again changes nothing, another contact after that is refused (`used`);
 * - a link code sent by a contact that another user linked already is refused
 *   (`contact-linked-elsewhere`), and so is any code sent by a contact over its attempt limit
 *   (`throttled`): either refusal ends the code (the bot it was sent to saw it, and its owner
 *   must not be able to send it from a contact of theirs); a contact sending it after that is
 *   refused (`used`), and the browser that asked for a sign-in code is told the first reason;
 * - a sign-in code signs in the browser that asked for it (it holds the poll secret) once, as the
 *   user who linked the confirming contact; a contact linked to nobody is refused
 *   (`contact-not-linked`), and a browser that comes back after it was signed in is refused (`used`);
 * - a confirmed sign-in is followed until `FOLLOW_GRACE_MS` after the expiry, so a browser that
 *   polls every few seconds is not refused for the last seconds of the code's life.
 * Each refusal is recorded once; a code sent with the other command, an unknown code or a wrong
 * poll secret is refused without a trace (nothing to record about a code that does not exist).
 */
export type MessengerCodeState =
  | { status: 'none' }
  | {
      status: 'issued' | 'confirmed' | 'completed';
      codeRef: string;
      purpose: CodePurpose;
      userId: string | null;
      pollSecretHash: string | null;
      expiresAt: number;
      confirmedBy: { messenger: Messenger; contactRef: string } | null;
      refused: readonly CodeRefusal[];
    };

export const messengerCodeStreamName = (codeRef: string) => `messengercode-${codeRef}`;

export const FOLLOW_GRACE_MS = 60_000;

export const MESSENGER_CODE_ERRORS = {
  unknown: 'Unknown code',
  invalid: 'This sign-in is not valid',
  expired: 'The code has expired: ask for a new one',
  used: 'The code was used already: ask for a new one',
  'contact-not-linked': 'The contact that sent the code is not linked to a Relay account: sign in another way and link it first',
  'contact-linked-elsewhere': 'The contact that sent the code is linked to another Relay account',
  throttled: 'The contact that sent the code sent too many codes: wait ten minutes, then ask for a new one',
} as const;

/** The refusal that ended an open code, if one did. */
const endedBy = (state: Extract<MessengerCodeState, { codeRef: string }>): CodeRefusal | undefined => state.refused.find((reason) => ENDING_REFUSALS.includes(reason));

const refuse = (state: Extract<MessengerCodeState, { codeRef: string }>, reason: CodeRefusal, now: Date): Decision<MessengerCodeEvent> =>
  state.refused.includes(reason) ? domainError('illegal_state', MESSENGER_CODE_ERRORS[reason]) : [{ type: 'MessengerCodeRefused', data: { codeRef: state.codeRef, reason, refusedAt: now.toISOString() } }];

export const decide = (command: MessengerCodeCommand, state: MessengerCodeState): Decision<MessengerCodeEvent> => {
  switch (command.type) {
    case 'IssueMessengerCode': {
      if (state.status !== 'none') return domainError('conflict', 'Code already issued');
      const { codeRef, purpose, userId, pollSecretHash, expiresAt, now } = command.data;
      return [{ type: 'MessengerCodeIssued', data: { codeRef, purpose, userId, pollSecretHash, expiresAt: expiresAt.toISOString(), issuedAt: now.toISOString() } }];
    }
    case 'ConfirmMessengerCode': {
      const { command: sentAs, messenger, contactRef, appId, linkedTo, throttled, now } = command.data;
      if (state.status === 'none' || state.purpose !== sentAs) return domainError('not_found', MESSENGER_CODE_ERRORS.unknown);
      if (state.confirmedBy !== null) return state.confirmedBy.contactRef === contactRef && state.confirmedBy.messenger === messenger ? [] : refuse(state, 'used', now);
      if (endedBy(state) !== undefined) return refuse(state, 'used', now);
      if (now.getTime() >= state.expiresAt) return refuse(state, 'expired', now);
      if (throttled) return refuse(state, 'throttled', now);
      if (state.purpose === 'link' && linkedTo !== null && linkedTo !== state.userId) return refuse(state, 'contact-linked-elsewhere', now);
      return [{ type: 'MessengerCodeConfirmed', data: { codeRef: state.codeRef, purpose: state.purpose, messenger, contactRef, appId, confirmedAt: now.toISOString() } }];
    }
    case 'CompleteMessengerSignIn': {
      const { pollSecretHash, userId, now } = command.data;
      if (state.status === 'none' || state.purpose !== 'sign-in' || state.pollSecretHash !== pollSecretHash) return domainError('forbidden', MESSENGER_CODE_ERRORS.invalid);
      if (state.status === 'completed') return refuse(state, 'used', now);
      const ended = endedBy(state);
      if (state.status === 'issued' && ended !== undefined) return domainError('illegal_state', MESSENGER_CODE_ERRORS[ended]);
      if (state.status === 'issued') return now.getTime() >= state.expiresAt ? refuse(state, 'expired', now) : [];
      if (now.getTime() >= state.expiresAt + FOLLOW_GRACE_MS) return refuse(state, 'expired', now);
      if (userId === null) return refuse(state, 'contact-not-linked', now);
      return [{ type: 'MessengerSignInCompleted', data: { codeRef: state.codeRef, userId, completedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: MessengerCodeState, event: MessengerCodeEvent): MessengerCodeState => {
  switch (event.type) {
    case 'MessengerCodeIssued': {
      const { codeRef, purpose, userId, pollSecretHash, expiresAt } = event.data;
      return { status: 'issued', codeRef, purpose, userId, pollSecretHash, expiresAt: Date.parse(expiresAt), confirmedBy: null, refused: [] };
    }
    case 'MessengerCodeConfirmed':
      return state.status === 'none' ? state : { ...state, status: 'confirmed', confirmedBy: { messenger: event.data.messenger, contactRef: event.data.contactRef } };
    case 'MessengerCodeRefused':
      return state.status === 'none' ? state : { ...state, refused: [...state.refused, event.data.reason] };
    case 'MessengerSignInCompleted':
      return state.status === 'none' ? state : { ...state, status: 'completed' };
    default:
      return assertNever(event);
  }
};

export const messengerCodeDecider: Decider<MessengerCodeState, MessengerCodeCommand, MessengerCodeEvent> = {
  decide,
  evolve,
  initialState: () => ({ status: 'none' }),
};
