import { defaultPreferences, type NotificationPreferences } from '../../domain/user/notification-preferences.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { SendTier, UserEvent } from '../../domain/user/events.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { Projection } from '../projection.ts';

export interface UserView {
  id: string;
  name: string;
  email: string;
  tier: SendTier;
  /** Absent in snapshots of earlier versions: the defaults. */
  preferences?: NotificationPreferences;
  /** Where the paid tier bought by invoices ends (ISO 8601); absent when nothing was paid. */
  paidUntil?: string;
}

/** A messenger contact a user linked (`/link CODE`): the contact id is sealed (apps/commands/contact-seal.ts). */
export interface LinkedContactView {
  contactLinkId: string;
  userId: string;
  messenger: Messenger;
  contactRef: string;
  keyId: string;
  sealedContact: string;
  linkedAt: string;
}

export interface SessionView {
  sessionId: string;
  userId: string;
  /** Epoch ms. */
  startedAt: number;
  expiresAt: number;
}

/**
 * Users by id and e-mail, their send tier, and dashboard sessions by token hash until they end.
 * A session that expired is dropped when its user starts another one (decided by the events'
 * own times, so a rebuild from the history gives the same read model).
 */
export class UsersProjection implements Projection {
  readonly name = 'users';
  readonly categories = ['user'] as const;
  private readonly byId = new Map<string, UserView>();
  private readonly sessions = new Map<string, SessionView>();
  private readonly hashOfSession = new Map<string, string>();
  /** Linked contacts by link id, in the order they were linked. */
  private readonly contacts = new Map<string, LinkedContactView>();

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as UserEvent;
    switch (event.type) {
      case 'UserRegistered':
        this.byId.set(event.data.userId, { id: event.data.userId, name: event.data.name, email: event.data.email, tier: 'free' });
        return;
      case 'UserRenamed': {
        const user = this.byId.get(event.data.userId);
        if (user) user.name = event.data.name;
        return;
      }
      case 'SessionStarted': {
        const startedAt = Date.parse(event.data.startedAt);
        for (const [hash, session] of this.sessions) {
          if (session.userId === event.data.userId && session.expiresAt <= startedAt) this.forget(hash, session);
        }
        const session: SessionView = { sessionId: event.data.sessionId, userId: event.data.userId, startedAt, expiresAt: Date.parse(event.data.expiresAt) };
        this.sessions.set(event.data.tokenHash, session);
        this.hashOfSession.set(session.sessionId, event.data.tokenHash);
        return;
      }
      case 'SessionEnded': {
        const hash = this.hashOfSession.get(event.data.sessionId);
        const session = hash === undefined ? undefined : this.sessions.get(hash);
        if (hash !== undefined && session) this.forget(hash, session);
        return;
      }
      case 'SubscriptionExtended': {
        const user = this.byId.get(event.data.userId);
        if (user) user.paidUntil = event.data.paidUntil;
        return;
      }
      case 'SendTierChanged': {
        const user = this.byId.get(event.data.userId);
        if (user) user.tier = event.data.tier;
        return;
      }
      case 'NotificationPreferencesChanged': {
        const user = this.byId.get(event.data.userId);
        if (user) user.preferences = event.data.preferences;
        return;
      }
      case 'MessengerContactLinked': {
        const { userId, contactLinkId, messenger, contactRef, keyId, sealedContact, linkedAt } = event.data;
        this.contacts.set(contactLinkId, { contactLinkId, userId, messenger, contactRef, keyId, sealedContact, linkedAt });
        return;
      }
      case 'MessengerContactUnlinked':
        this.contacts.delete(event.data.contactLinkId);
        return;
      default:
        return;
    }
  }

  /** The contacts a user linked, oldest first. */
  contactsOf(userId: string): LinkedContactView[] {
    return [...this.contacts.values()].filter((c) => c.userId === userId);
  }

  /** The user who linked a contact first (by its keyed ref), if any. */
  userOfContact(contactRef: string): string | undefined {
    for (const contact of this.contacts.values()) if (contact.contactRef === contactRef) return contact.userId;
    return undefined;
  }

  /** Which alerts the user gets where. */
  preferencesOf(userId: string): NotificationPreferences {
    return this.byId.get(userId)?.preferences ?? defaultPreferences();
  }

  private forget(hash: string, session: SessionView): void {
    this.sessions.delete(hash);
    this.hashOfSession.delete(session.sessionId);
  }

  snapshot(): unknown {
    return { users: [...this.byId.values()], sessions: [...this.sessions.entries()], contacts: [...this.contacts.values()] };
  }

  restore(snapshot: unknown): void {
    const { users, sessions, contacts } = snapshot as { users: UserView[]; sessions: Array<[string, SessionView]>; contacts?: LinkedContactView[] };
    this.byId.clear();
    this.sessions.clear();
    this.hashOfSession.clear();
    this.contacts.clear();
    for (const contact of contacts ?? []) this.contacts.set(contact.contactLinkId, contact);
    for (const user of users) this.byId.set(user.id, user);
    for (const [hash, session] of sessions) {
      this.sessions.set(hash, session);
      this.hashOfSession.set(session.sessionId, hash);
    }
  }

  user(userId: string): UserView | undefined {
    return this.byId.get(userId);
  }

  /** The send tier at `now`: paid when an operator set it (`relay user tier`) or while paid time bought by invoices lasts. */
  tierOf(userId: string, now: number = Date.now()): SendTier {
    const user = this.byId.get(userId);
    if (!user) return 'free';
    return user.tier === 'paid' || (user.paidUntil !== undefined && Date.parse(user.paidUntil) > now) ? 'paid' : 'free';
  }

  /** The live session of a token hash, with its user; undefined for an unknown, ended or expired one. */
  session(tokenHash: string, now: number): { user: UserView; session: SessionView } | undefined {
    const session = this.sessions.get(tokenHash);
    if (!session || session.expiresAt <= now) return undefined;
    const user = this.byId.get(session.userId);
    return user && { user, session };
  }

  /** The user of a live session, or undefined for an unknown, ended or expired one. */
  sessionUser(tokenHash: string, now: number): UserView | undefined {
    return this.session(tokenHash, now)?.user;
  }

  /** A user's live sessions, oldest first. */
  sessionsOf(userId: string, now: number): SessionView[] {
    return [...this.sessions.values()].filter((s) => s.userId === userId && s.expiresAt > now).sort((a, b) => a.startedAt - b.startedAt);
  }
}
