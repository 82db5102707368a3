import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { SendTier, UserEvent } from '../../domain/user/events.ts';
import type { Projection } from '../projection.ts';

export interface UserView {
  id: string;
  name: string;
  email: string;
  tier: SendTier;
}

interface SessionView {
  userId: string;
  expiresAt: number;
}

/** Users by id and e-mail, their send tier, and dashboard sessions by token hash. */
export class UsersProjection implements Projection {
  readonly name = 'users';
  readonly categories = ['user'] as const;
  private readonly byId = new Map<string, UserView>();
  private readonly sessions = new Map<string, SessionView>();

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
      case 'SessionStarted':
        this.sessions.set(event.data.tokenHash, { userId: event.data.userId, expiresAt: Date.parse(event.data.expiresAt) });
        return;
      case 'SendTierChanged': {
        const user = this.byId.get(event.data.userId);
        if (user) user.tier = event.data.tier;
        return;
      }
      default:
        return;
    }
  }

  snapshot(): unknown {
    return { users: [...this.byId.values()], sessions: [...this.sessions.entries()] };
  }

  restore(snapshot: unknown): void {
    const { users, sessions } = snapshot as { users: UserView[]; sessions: Array<[string, SessionView]> };
    this.byId.clear();
    this.sessions.clear();
    for (const user of users) this.byId.set(user.id, user);
    for (const [hash, session] of sessions) this.sessions.set(hash, session);
  }

  user(userId: string): UserView | undefined {
    return this.byId.get(userId);
  }

  tierOf(userId: string): SendTier {
    return this.byId.get(userId)?.tier ?? 'free';
  }

  /** The user of a live session, or undefined for an unknown or expired one. */
  sessionUser(tokenHash: string, now: number): UserView | undefined {
    const session = this.sessions.get(tokenHash);
    if (!session || session.expiresAt <= now) return undefined;
    return this.byId.get(session.userId);
  }
}
