import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { userDecider } from './decider.ts';
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

  it('changes the send tier once', () => {
    const paid: UserEvent = { type: 'SendTierChanged', data: { userId: 'usr_1', tier: 'paid', changedAt: now.toISOString() } };
    spec.given([registered]).when({ type: 'ChangeSendTier', data: { tier: 'paid', now } }).then([paid]);
    spec.given([registered, paid]).when({ type: 'ChangeSendTier', data: { tier: 'paid', now } }).thenNothingHappens();
  });
});
