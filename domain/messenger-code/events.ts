import type { Messenger } from '../shared/messengers.ts';

/** What a code is for: signing in (`/signin CODE`), or linking the sender to the user who asked (`/link CODE`). */
export type CodePurpose = 'sign-in' | 'link';

/**
 * Why a code did not do what it was sent for. `contact-linked-elsewhere` and `throttled` (a contact
 * over its attempt limit sent it) end the code: whoever else saw it (the bot it was sent to) cannot
 * use it after that.
 */
export type CodeRefusal = 'expired' | 'used' | 'contact-not-linked' | 'contact-linked-elsewhere' | 'throttled';

/** The refusals of a sender that end an open code (issue 47). */
export const ENDING_REFUSALS: readonly CodeRefusal[] = ['contact-linked-elsewhere', 'throttled'];

/**
 * On stream `messengercode-<codeRef>` (`codeRef`: a keyed hash of the code, so the code itself is
 * in no event): a short code shown in the dashboard that a person sends to any Relay bot, which
 * proves that they hold that messenger contact. The contact is recorded only as `contactRef`, a
 * keyed hash of messenger and contact id (docs/privacy.md).
 */
export type MessengerCodeEvent =
  | {
      type: 'MessengerCodeIssued';
      data: {
        codeRef: string;
        purpose: CodePurpose;
        /** The user who asked to link a contact (purpose `link`); none for a sign-in. */
        userId: string | null;
        /** The hash of the secret with which the browser that asked follows a sign-in; none for a link. */
        pollSecretHash: string | null;
        expiresAt: string;
        issuedAt: string;
      };
    }
  /** A contact sent the code, in time, with the right command, to the bot of `appId`. */
  | { type: 'MessengerCodeConfirmed'; data: { codeRef: string; purpose: CodePurpose; messenger: Messenger; contactRef: string; appId: string; confirmedAt: string } }
  /** The code could not do what it was sent or followed for (each reason recorded once). */
  | { type: 'MessengerCodeRefused'; data: { codeRef: string; reason: CodeRefusal; refusedAt: string } }
  /** The browser that asked for a sign-in code was signed in as the user who linked the contact that sent it. */
  | { type: 'MessengerSignInCompleted'; data: { codeRef: string; userId: string; completedAt: string } };
