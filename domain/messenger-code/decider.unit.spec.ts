import { describe, expect, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { MessengerCodeCommand } from './commands.ts';
import { codeCommandOf, displayCode } from './code.ts';
import { FOLLOW_GRACE_MS, MESSENGER_CODE_ERRORS, messengerCodeDecider } from './decider.ts';
import type { MessengerCodeEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const expiresAt = new Date(now.getTime() + 10 * 60_000);
const afterExpiry = new Date(expiresAt.getTime() + 1);
const spec = deciderSpec(messengerCodeDecider);

const issuedSignIn: MessengerCodeEvent = { type: 'MessengerCodeIssued', data: { codeRef: 'c1', purpose: 'sign-in', userId: null, pollSecretHash: 'p1', expiresAt: expiresAt.toISOString(), issuedAt: now.toISOString() } };
const issuedLink: MessengerCodeEvent = { type: 'MessengerCodeIssued', data: { codeRef: 'c1', purpose: 'link', userId: 'usr_1', pollSecretHash: null, expiresAt: expiresAt.toISOString(), issuedAt: now.toISOString() } };
const confirmed = (purpose: 'sign-in' | 'link', contactRef = 'ref-a', at = now): MessengerCodeEvent => ({
  type: 'MessengerCodeConfirmed',
  data: { codeRef: 'c1', purpose, messenger: 'signal', contactRef, appId: 'app_1', confirmedAt: at.toISOString() },
});
const refused = (reason: 'expired' | 'used' | 'contact-not-linked' | 'contact-linked-elsewhere' | 'throttled', at = now): MessengerCodeEvent => ({ type: 'MessengerCodeRefused', data: { codeRef: 'c1', reason, refusedAt: at.toISOString() } });
const confirm = (command: 'sign-in' | 'link', overrides: Partial<Extract<MessengerCodeCommand, { type: 'ConfirmMessengerCode' }>['data']> = {}): MessengerCodeCommand => ({
  type: 'ConfirmMessengerCode',
  data: { command, messenger: 'signal', contactRef: 'ref-a', appId: 'app_1', linkedTo: null, throttled: false, now, ...overrides },
});
const follow = (userId: string | null, at = now, pollSecretHash = 'p1'): MessengerCodeCommand => ({ type: 'CompleteMessengerSignIn', data: { pollSecretHash, userId, now: at } });

describe('messenger code decider', () => {
  it('issues a code by its ref only', () =>
    spec.given([]).when({ type: 'IssueMessengerCode', data: { codeRef: 'c1', purpose: 'sign-in', userId: null, pollSecretHash: 'p1', expiresAt, now } }).then([issuedSignIn]));

  it('refuses to issue a code whose ref exists (the caller draws another)', () =>
    spec.given([issuedSignIn]).when({ type: 'IssueMessengerCode', data: { codeRef: 'c1', purpose: 'link', userId: 'usr_1', pollSecretHash: null, expiresAt, now } }).thenFails('conflict'));

  describe('sent by a contact', () => {
    it('is confirmed by the first contact that sends it with the right command in time', () => {
      spec.given([issuedSignIn]).when(confirm('sign-in')).then([confirmed('sign-in')]);
      spec.given([issuedLink]).when(confirm('link')).then([confirmed('link')]);
    });

    it('changes nothing when the same message is seen again', () => spec.given([issuedSignIn, confirmed('sign-in')]).when(confirm('sign-in')).thenNothingHappens());

    it('refuses another contact once it was confirmed, recording that once', () => {
      spec.given([issuedSignIn, confirmed('sign-in')]).when(confirm('sign-in', { contactRef: 'ref-b' })).then([refused('used')]);
      spec.given([issuedSignIn, confirmed('sign-in'), refused('used')]).when(confirm('sign-in', { contactRef: 'ref-b' })).thenFails('illegal_state', MESSENGER_CODE_ERRORS.used);
    });

    it('refuses a code sent after its expiry, recording that once', () => {
      spec.given([issuedSignIn]).when(confirm('sign-in', { now: afterExpiry })).then([refused('expired', afterExpiry)]);
      spec.given([issuedSignIn, refused('expired', afterExpiry)]).when(confirm('sign-in', { now: afterExpiry })).thenFails('illegal_state', MESSENGER_CODE_ERRORS.expired);
    });

    it('ignores an unknown code, or one sent with the other command, without a trace', () => {
      spec.given([]).when(confirm('sign-in')).thenFails('not_found', MESSENGER_CODE_ERRORS.unknown);
      spec.given([issuedSignIn]).when(confirm('link')).thenFails('not_found', MESSENGER_CODE_ERRORS.unknown);
      spec.given([issuedLink]).when(confirm('sign-in')).thenFails('not_found', MESSENGER_CODE_ERRORS.unknown);
    });

    it('refuses to link a contact that another user linked, and the refusal ends the code (issue 47: the bot it was sent to saw it)', () => {
      spec.given([issuedLink]).when(confirm('link', { linkedTo: 'usr_2' })).then([refused('contact-linked-elsewhere')]);
      // The owner of the bot the code was sent to sends it from a contact of theirs: refused, recorded once.
      spec.given([issuedLink, refused('contact-linked-elsewhere')]).when(confirm('link', { contactRef: 'ref-b' })).then([refused('used')]);
      spec.given([issuedLink, refused('contact-linked-elsewhere'), refused('used')]).when(confirm('link', { contactRef: 'ref-b' })).thenFails('illegal_state', MESSENGER_CODE_ERRORS.used);
    });

    it('refuses a code sent by a contact over its attempt limit, and that ends the code too (issue 47)', () => {
      spec.given([issuedLink]).when(confirm('link', { throttled: true })).then([refused('throttled')]);
      spec.given([issuedLink, refused('throttled')]).when(confirm('link', { contactRef: 'ref-b' })).then([refused('used')]);
      spec.given([issuedSignIn]).when(confirm('sign-in', { throttled: true })).then([refused('throttled')]);
      spec.given([issuedSignIn, refused('throttled')]).when(confirm('sign-in', { contactRef: 'ref-b' })).then([refused('used')]);
      // The browser that asked is told why, and is not signed in by a later contact.
      spec.given([issuedSignIn, refused('throttled')]).when(follow('usr_1')).thenFails('illegal_state', MESSENGER_CODE_ERRORS.throttled);
      // A code confirmed before is not ended by the same contact's throttled repeat.
      spec.given([issuedLink, confirmed('link')]).when(confirm('link', { throttled: true })).thenNothingHappens();
      // An unknown code is still ignored without a trace.
      spec.given([]).when(confirm('link', { throttled: true })).thenFails('not_found', MESSENGER_CODE_ERRORS.unknown);
    });

    it('confirms a link of a contact the same user linked before (the link itself changes nothing)', () =>
      spec.given([issuedLink]).when(confirm('link', { linkedTo: 'usr_1' })).then([confirmed('link')]));
  });

  describe('followed by the browser that asked to sign in', () => {
    it('is pending until a contact confirmed it', () => spec.given([issuedSignIn]).when(follow('usr_1')).thenNothingHappens());

    it('signs in once as the user who linked the confirming contact', () => {
      const completed: MessengerCodeEvent = { type: 'MessengerSignInCompleted', data: { codeRef: 'c1', userId: 'usr_1', completedAt: now.toISOString() } };
      spec.given([issuedSignIn, confirmed('sign-in')]).when(follow('usr_1')).then([completed]);
      spec.given([issuedSignIn, confirmed('sign-in'), completed]).when(follow('usr_1')).then([refused('used')]);
      spec.given([issuedSignIn, confirmed('sign-in'), completed, refused('used')]).when(follow('usr_1')).thenFails('illegal_state', MESSENGER_CODE_ERRORS.used);
    });

    it('refuses a contact linked to nobody, once', () => {
      spec.given([issuedSignIn, confirmed('sign-in')]).when(follow(null)).then([refused('contact-not-linked')]);
      spec.given([issuedSignIn, confirmed('sign-in'), refused('contact-not-linked')]).when(follow(null)).thenFails('illegal_state', MESSENGER_CODE_ERRORS['contact-not-linked']);
    });

    it('refuses a code nobody confirmed in time, and a confirmed one followed after the grace', () => {
      spec.given([issuedSignIn]).when(follow('usr_1', afterExpiry)).then([refused('expired', afterExpiry)]);
      const late = new Date(expiresAt.getTime() + FOLLOW_GRACE_MS);
      spec.given([issuedSignIn, confirmed('sign-in')]).when(follow('usr_1', late)).then([refused('expired', late)]);
      spec
        .given([issuedSignIn, confirmed('sign-in')])
        .when(follow('usr_1', afterExpiry))
        .then([{ type: 'MessengerSignInCompleted', data: { codeRef: 'c1', userId: 'usr_1', completedAt: afterExpiry.toISOString() } }]);
    });

    it('refuses a wrong poll secret, or a link code, as if the sign-in did not exist', () => {
      spec.given([issuedSignIn, confirmed('sign-in')]).when(follow('usr_1', now, 'p2')).thenFails('forbidden', MESSENGER_CODE_ERRORS.invalid);
      spec.given([issuedLink, confirmed('link')]).when(follow('usr_1', now, 'p1')).thenFails('forbidden', MESSENGER_CODE_ERRORS.invalid);
      spec.given([]).when(follow('usr_1')).thenFails('forbidden', MESSENGER_CODE_ERRORS.invalid);
    });
  });
});

describe('code commands', () => {
  it('reads /signin and /link with the code typed any way', () => {
    expect(codeCommandOf('/signin ABCD-EFGH')).toEqual({ purpose: 'sign-in', code: 'ABCDEFGH' });
    expect(codeCommandOf('  /SignIn abcd efgh ')).toEqual({ purpose: 'sign-in', code: 'ABCDEFGH' });
    expect(codeCommandOf('/link@relaybot 0o1i-LL23')).toEqual({ purpose: 'link', code: '00111123' });
    expect(displayCode('ABCDEFGH')).toBe('ABCD-EFGH');
  });

  it('reads nothing else', () => {
    for (const text of ['/signin', '/signin ABCD-EFG', '/signin ABCD-EFGHJ', '/signin ABCU-EFGH', '/login ABCD-EFGH', 'signin ABCD-EFGH', '/signin ABCD-EFGH extra', `/signin ${'A'.repeat(70)}`])
      expect(codeCommandOf(text), text).toBeUndefined();
  });
});
