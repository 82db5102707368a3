import { SEED_BYTES } from './identity.ts';

/** Where a bot's Session identity came from: made by Relay, or imported by an operator. */
export type SessionIdentityOrigin = 'new' | 'imported';

/** Follows the seeds kept, including those another process (another instance, the CLI) keeps. */
export interface SessionIdentityWatch {
  /** Resolves once every seed kept before the call has been handed to the watcher. */
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Where the bots' Session seeds are kept: one per app-messenger, the first one kept staying (its
 * Session ID is the app-messenger's address). A seed is the whole identity, so it is kept sealed
 * (the operator's secret key, RELAY_SECRET_KEY, through the SecretBox other secrets use), never in
 * clear and never logged. Relay keeps them in the event history (apps/boot/session-identities.ts),
 * which every instance of a deployment shares.
 */
export interface SessionIdentityStore {
  /** Every seed held, by app-messenger id. */
  all(): Promise<ReadonlyMap<string, Buffer>>;
  /** The seed of one app-messenger, if it has one. */
  seedOf(appMessengerId: string): Promise<Buffer | undefined>;
  /**
   * Keeps `seed` for the app-messenger unless it has one already, and returns the seed it holds
   * now: `seed`, or the one kept before (by this process or another).
   */
  claim(appMessengerId: string, seed: Buffer, origin: SessionIdentityOrigin): Promise<Buffer>;
  /** Hands every seed kept (those before the call, then new ones as they are kept) to `onSeed`. */
  watch?(onSeed: (appMessengerId: string, seed: Buffer) => void): Promise<SessionIdentityWatch>;
  /** The bot's send clock: its messages so far were stamped at or before this (epoch ms; 0 when none). */
  sendClockOf(appMessengerId: string): Promise<number>;
  /** Raises the bot's send clock to `upTo` (never lowers it); resolves once it is kept. */
  advanceSendClock(appMessengerId: string, upTo: number): Promise<void>;
}

/** Seeds in memory only: for tests. */
export class MemorySessionIdentityStore implements SessionIdentityStore {
  private readonly seeds = new Map<string, Buffer>();
  private readonly clocks = new Map<string, number>();

  async all(): Promise<ReadonlyMap<string, Buffer>> {
    return new Map(this.seeds);
  }

  async seedOf(appMessengerId: string): Promise<Buffer | undefined> {
    return this.seeds.get(appMessengerId);
  }

  async claim(appMessengerId: string, seed: Buffer): Promise<Buffer> {
    if (seed.byteLength !== SEED_BYTES) throw new Error(`a Session seed is ${SEED_BYTES} bytes`);
    const held = this.seeds.get(appMessengerId);
    if (held) return Buffer.from(held);
    this.seeds.set(appMessengerId, Buffer.from(seed));
    return Buffer.from(seed);
  }

  async sendClockOf(appMessengerId: string): Promise<number> {
    return this.clocks.get(appMessengerId) ?? 0;
  }

  async advanceSendClock(appMessengerId: string, upTo: number): Promise<void> {
    this.clocks.set(appMessengerId, Math.max(upTo, this.clocks.get(appMessengerId) ?? 0));
  }
}
