import { defaultPreferences, type NotificationPreferences } from '../../domain/user/notification-preferences.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { SendTier, UserEvent } from '../../domain/user/events.ts';
import type { Projection } from '../projection.ts';

export interface UserView {
  id: string;
  name: string;
  email: string;
  tier: SendTier;
  /** Absent in snapshots of earlier versions: the defaults. */
  preferences?: NotificationPreferences;
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
      default:
        return;
    }
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
    return { users: [...this.byId.values()], sessions: [...this.sessions.entries()] };
  }

  restore(snapshot: unknown): void {
    const { users, sessions } = snapshot as { users: UserView[]; sessions: Array<[string, SessionView]> };
    this.byId.clear();
    this.sessions.clear();
    this.hashOfSession.clear();
    for (const user of users) this.byId.set(user.id, user);
    for (const [hash, session] of sessions) {
      this.sessions.set(hash, session);
      this.hashOfSession.set(session.sessionId, hash);
    }
  }

  user(userId: string): UserView | undefined {
    return this.byId.get(userId);
  }

  tierOf(userId: string): SendTier {
    return this.byId.get(userId)?.tier ?? 'free';
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
