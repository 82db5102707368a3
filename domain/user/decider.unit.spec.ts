import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { MAX_LINKED_CONTACTS, MAX_LIVE_SESSIONS, RECOVERY_REFUSED, userDecider } from './decider.ts';
import type { UserEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(userDecider);
const registered: UserEvent = {
  type: 'UserRegistered',
  data: { userId: 'usr_1', email: 'me@example.com', name: 'Me', registeredAt: now.toISOString() },
};

describe('user decider', () => {
  it('registers a new user', () =>
    spec.given([]).when({ type: 'RegisterUser', data: { userId: 'usr_1', email: 'me@example.com', name: 'Me', now } }).then([registered]));

  it('registering an existing user changes nothing', () =>
    spec.given([registered]).when({ type: 'RegisterUser', data: { userId: 'usr_1', email: 'me@example.com', name: 'X', now } }).thenNothingHappens());

  it('renames with a trimmed name', () =>
    spec
      .given([registered])
      .when({ type: 'RenameUser', data: { name: '  New  ', now } })
      .then([{ type: 'UserRenamed', data: { userId: 'usr_1', name: 'New', renamedAt: now.toISOString() } }]));

  it('refuses an empty name', () =>
    spec.given([registered]).when({ type: 'RenameUser', data: { name: '   ', now } }).thenFails('validation', 'Name is required'));

  it('refuses to rename an unknown user', () => spec.given([]).when({ type: 'RenameUser', data: { name: 'A', now } }).thenFails('not_found'));

  it('starts a session for a registered user', () =>
    spec
      .given([registered])
      .when({ type: 'StartSession', data: { sessionId: 's1', tokenHash: 'h', expiresAt: new Date('2026-02-01T00:00:00.000Z'), now } })
      .then([
        {
          type: 'SessionStarted',
          data: { userId: 'usr_1', sessionId: 's1', tokenHash: 'h', startedAt: now.toISOString(), expiresAt: '2026-02-01T00:00:00.000Z' },
        },
      ]));

  const started = (sessionId: string, startedAt: Date, expiresAt: Date): UserEvent => ({
    type: 'SessionStarted',
    data: { userId: 'usr_1', sessionId, tokenHash: `h-${sessionId}`, startedAt: startedAt.toISOString(), expiresAt: expiresAt.toISOString() },
  });
  const later = (ms: number) => new Date(now.getTime() + ms);
  const ended = (sessionId: string, reason: 'logout' | 'revoked' | 'replaced', at = now): UserEvent => ({
    type: 'SessionEnded',
    data: { userId: 'usr_1', sessionId, reason, endedAt: at.toISOString() },
  });

  it('ends a session on logout, once', () => {
    const s1 = started('s1', later(-1000), later(3_600_000));
    spec.given([registered, s1]).when({ type: 'EndSession', data: { sessionId: 's1', reason: 'logout', now } }).then([ended('s1', 'logout')]);
    spec.given([registered, s1, ended('s1', 'logout')]).when({ type: 'EndSession', data: { sessionId: 's1', reason: 'logout', now } }).thenFails('not_found', 'Session not found');
  });

  it('an expired session needs no end; an unknown one is not found', () => {
    const s1 = started('s1', later(-10_000), later(-1));
    spec.given([registered, s1]).when({ type: 'EndSession', data: { sessionId: 's1', reason: 'revoked', now } }).thenNothingHappens();
    spec.given([registered]).when({ type: 'EndSession', data: { sessionId: 'nope', reason: 'revoked', now } }).thenFails('not_found', 'Session not found');
  });

  it('ends every live session at once (expired ones are left alone)', () =>
    spec
      .given([registered, started('old', later(-10_000), later(-1)), started('s1', later(-5000), later(1000)), started('s2', later(-4000), later(2000))])
      .when({ type: 'EndAllSessions', data: { reason: 'revoked', now } })
      .then([ended('s1', 'revoked'), ended('s2', 'revoked')]));

  it(`holds at most ${MAX_LIVE_SESSIONS} live sessions: a new one replaces the oldest`, () => {
    const sessions = Array.from({ length: MAX_LIVE_SESSIONS }, (_, i) => started(`s${i}`, later(-100_000 + i * 1000), later(3_600_000)));
    spec
      .given([registered, ...sessions])
      .when({ type: 'StartSession', data: { sessionId: 'new', tokenHash: 'h-new', expiresAt: later(3_600_000), now } })
      .then([ended('s0', 'replaced'), started('new', now, later(3_600_000))]);
  });

  it('refuses names that are too long or not one line', () => {
    spec.given([registered]).when({ type: 'RenameUser', data: { name: 'x'.repeat(101), now } }).thenFails('validation', 'Name exceeds 100 character limit');
    spec.given([registered]).when({ type: 'RenameUser', data: { name: 'a\u0000b', now } }).thenFails('validation', 'Name contains invalid characters');
    spec.given([registered]).when({ type: 'RenameUser', data: { name: 'two\nlines', now } }).thenFails('validation', 'Name contains invalid characters');
    spec.given([registered]).when({ type: 'RenameUser', data: { name: '😀'.repeat(100), now } }).then([
      { type: 'UserRenamed', data: { userId: 'usr_1', name: '😀'.repeat(100), renamedAt: now.toISOString() } },
    ]);
  });

  it('changes the send tier once', () => {
    const paid: UserEvent = { type: 'SendTierChanged', data: { userId: 'usr_1', tier: 'paid', changedAt: now.toISOString() } };
    spec.given([registered]).when({ type: 'ChangeSendTier', data: { tier: 'paid', now } }).then([paid]);
    spec.given([registered, paid]).when({ type: 'ChangeSendTier', data: { tier: 'paid', now } }).thenNothingHappens();
  });

  it('keeps the hash of the latest recovery code, which signs in once', () => {
    const registered: UserEvent = { type: 'UserRegistered', data: { userId: 'usr_r', email: 'r@example.com', name: 'r', registeredAt: new Date(0).toISOString() } };
    const at = new Date('2026-01-02T03:04:05.000Z');
    const generated = (codeHash: string): UserEvent => ({ type: 'RecoveryCodeGenerated', data: { userId: 'usr_r', codeHash, generatedAt: at.toISOString() } });
    const recoverySpec = deciderSpec(userDecider);
    recoverySpec.given([registered]).when({ type: 'GenerateRecoveryCode', data: { codeHash: 'h1', now: at } }).then([generated('h1')]);
    recoverySpec.given([registered, generated('h1')]).when({ type: 'UseRecoveryCode', data: { codeHash: 'h1', now: at } }).then([{ type: 'RecoveryCodeUsed', data: { userId: 'usr_r', usedAt: at.toISOString() } }]);
    recoverySpec.given([registered, generated('h1'), generated('h2')]).when({ type: 'UseRecoveryCode', data: { codeHash: 'h1', now: at } }).thenFails('forbidden', RECOVERY_REFUSED);
    recoverySpec.given([registered, generated('h1'), { type: 'RecoveryCodeUsed', data: { userId: 'usr_r', usedAt: at.toISOString() } }]).when({ type: 'UseRecoveryCode', data: { codeHash: 'h1', now: at } }).thenFails('forbidden', RECOVERY_REFUSED);
    recoverySpec.given([registered]).when({ type: 'UseRecoveryCode', data: { codeHash: 'h1', now: at } }).thenFails('forbidden', RECOVERY_REFUSED);
    recoverySpec.given([]).when({ type: 'UseRecoveryCode', data: { codeHash: 'h1', now: at } }).thenFails('forbidden', RECOVERY_REFUSED);
  });

  describe('linked messenger contacts', () => {
    const link = (contactLinkId: string, contactRef: string) =>
      ({ type: 'LinkMessengerContact', data: { contactLinkId, messenger: 'signal', contactRef, keyId: `k-${contactLinkId}`, sealedContact: `s-${contactLinkId}`, now } }) as const;
    const linked = (contactLinkId: string, contactRef: string): UserEvent => ({
      type: 'MessengerContactLinked',
      data: { userId: 'usr_1', contactLinkId, messenger: 'signal', contactRef, keyId: `k-${contactLinkId}`, sealedContact: `s-${contactLinkId}`, linkedAt: now.toISOString() },
    });

    it('links a contact, sealed, once per code and once per contact', () => {
      spec.given([registered]).when(link('c1', 'ref-a')).then([linked('c1', 'ref-a')]);
      spec.given([registered, linked('c1', 'ref-a')]).when(link('c1', 'ref-a')).thenNothingHappens();
      spec.given([registered, linked('c1', 'ref-a')]).when(link('c2', 'ref-a')).thenNothingHappens();
      spec.given([registered, linked('c1', 'ref-a')]).when(link('c2', 'ref-b')).then([linked('c2', 'ref-b')]);
    });

    it(`links at most ${MAX_LINKED_CONTACTS} contacts`, () => {
      const full = Array.from({ length: MAX_LINKED_CONTACTS }, (_, i) => linked(`c${i}`, `ref-${i}`));
      spec.given([registered, ...full]).when(link('cx', 'ref-x')).thenFails('limit', `Contact limit reached: at most ${MAX_LINKED_CONTACTS} per user`);
    });

    it('unlinks a contact with the key to destroy, and then the contact can be linked again', () => {
      const unlinked: UserEvent = { type: 'MessengerContactUnlinked', data: { userId: 'usr_1', contactLinkId: 'c1', keyId: 'k-c1', unlinkedAt: now.toISOString() } };
      spec.given([registered, linked('c1', 'ref-a')]).when({ type: 'UnlinkMessengerContact', data: { contactLinkId: 'c1', now } }).then([unlinked]);
      spec.given([registered, linked('c1', 'ref-a'), unlinked]).when({ type: 'UnlinkMessengerContact', data: { contactLinkId: 'c1', now } }).thenFails('not_found', 'Contact not found');
      spec.given([registered, linked('c1', 'ref-a'), unlinked]).when(link('c2', 'ref-a')).then([linked('c2', 'ref-a')]);
    });

    it('refuses to link to an unknown user', () => spec.given([]).when(link('c1', 'ref-a')).thenFails('not_found'));
  });

  describe('subscription', () => {
    const day = 86_400_000;
    const extended = (invoiceId: string, period: 'monthly' | 'annual', from: number, until: number, at = now): UserEvent => ({
      type: 'SubscriptionExtended',
      data: { userId: 'usr_1', invoiceId, period, paidFrom: new Date(from).toISOString(), paidUntil: new Date(until).toISOString(), extendedAt: at.toISOString() },
    });
    const extend = (invoiceId: string, period: 'monthly' | 'annual', at = now) => ({ type: 'ExtendSubscription', data: { invoiceId, period, now: at } }) as const;

    it('starts 30 or 365 days of the paid tier now', () => {
      spec.given([registered]).when(extend('inv_1', 'monthly')).then([extended('inv_1', 'monthly', now.getTime(), now.getTime() + 30 * day)]);
      spec.given([registered]).when(extend('inv_1', 'annual')).then([extended('inv_1', 'annual', now.getTime(), now.getTime() + 365 * day)]);
    });

    it('extends from where the paid time ends, and counts an invoice once', () => {
      const first = extended('inv_1', 'monthly', now.getTime(), now.getTime() + 30 * day);
      const later = new Date(now.getTime() + 10 * day);
      spec.given([registered, first]).when(extend('inv_2', 'monthly', later)).then([extended('inv_2', 'monthly', now.getTime() + 30 * day, now.getTime() + 60 * day, later)]);
      spec.given([registered, first]).when(extend('inv_1', 'monthly', later)).thenNothingHappens();
    });

    it('starts again from the payment when the paid time had lapsed', () => {
      const first = extended('inv_1', 'monthly', now.getTime(), now.getTime() + 30 * day);
      const lapsed = new Date(now.getTime() + 40 * day);
      spec.given([registered, first]).when(extend('inv_2', 'annual', lapsed)).then([extended('inv_2', 'annual', lapsed.getTime(), lapsed.getTime() + 365 * day, lapsed)]);
    });
  });
});
