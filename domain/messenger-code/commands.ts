import type { Messenger } from '../shared/messengers.ts';
import type { CodePurpose } from './events.ts';

export type MessengerCodeCommand =
  | { type: 'IssueMessengerCode'; data: { codeRef: string; purpose: CodePurpose; userId: string | null; pollSecretHash: string | null; expiresAt: Date; now: Date } }
  /**
   * A contact sent `/signin CODE` or `/link CODE` to a bot. `linkedTo` is the user the contact is
   * linked to already, if any (from the read model): a link to another user is refused.
   * `throttled`: the contact sent more codes than its attempt limit allows; the code is refused.
   */
  | { type: 'ConfirmMessengerCode'; data: { command: CodePurpose; messenger: Messenger; contactRef: string; appId: string; linkedTo: string | null; throttled: boolean; now: Date } }
  /**
   * The browser that asked for a sign-in code asks whether it signs in: `userId` is the user that
   * the confirming contact is linked to (from the read model), or null.
   */
  | { type: 'CompleteMessengerSignIn'; data: { pollSecretHash: string; userId: string | null; now: Date } };
