/**
 * The timestamps a bot's messages carry. Session's apps drop a second message from one sender
 * with the timestamp of one they have (session-desktop `ts/receiver/dataMessage.ts`), so the
 * timestamps of a bot's messages to a contact strictly increase: across the delivery worker's
 * parallel sends (one clock per bot in the process, taken synchronously) and across restarts and
 * instances (a high-water mark kept in the history, written `leadMs` ahead of the stamps it
 * covers, so it is written once per `leadMs` of sending rather than once per message; a Relay that
 * starts again stamps after it, at most `leadMs` ahead of the network's time).
 *
 * The stamps increase per bot, which is stronger than per contact and costs nothing more.
 */
export interface SendClockStore {
  sendClockOf(appMessengerId: string): Promise<number>;
  advanceSendClock(appMessengerId: string, upTo: number): Promise<void>;
}

interface BotClock {
  /** The last stamp given. */
  last: number;
  /** Kept in the store: stamps up to this may be given without writing. */
  kept: number;
  /** A write in flight, and the value it keeps. */
  writing: Promise<void> | undefined;
  writingUpTo: number;
}

export class SendClock {
  private readonly bots = new Map<string, Promise<BotClock>>();

  constructor(
    private readonly store: SendClockStore,
    private readonly leadMs = 3_000,
  ) {}

  /**
   * A stamp for the next message of the bot of `appMessengerId`: the network time `now`, or one
   * past the last stamp if that is later. Resolves once the stamp is covered by the kept mark.
   */
  async stamp(appMessengerId: string, now: number): Promise<number> {
    const clock = await this.clockOf(appMessengerId);
    const stamp = Math.max(Math.floor(now), clock.last + 1);
    clock.last = stamp;
    await this.cover(appMessengerId, clock, stamp);
    return stamp;
  }

  private clockOf(appMessengerId: string): Promise<BotClock> {
    let clock = this.bots.get(appMessengerId);
    if (!clock) {
      clock = this.store.sendClockOf(appMessengerId).then((kept) => ({ last: kept, kept, writing: undefined, writingUpTo: kept }));
      this.bots.set(appMessengerId, clock);
      // A store that could not be read is asked again next time.
      clock.catch(() => this.bots.delete(appMessengerId));
    }
    return clock;
  }

  private async cover(appMessengerId: string, clock: BotClock, stamp: number): Promise<void> {
    while (stamp > clock.kept) {
      if (clock.writing && stamp <= clock.writingUpTo) {
        await clock.writing;
        continue;
      }
      if (clock.writing) {
        await clock.writing.catch(() => undefined);
        continue;
      }
      const upTo = stamp + this.leadMs;
      clock.writingUpTo = upTo;
      clock.writing = this.store.advanceSendClock(appMessengerId, upTo).then(
        () => {
          clock.kept = Math.max(clock.kept, upTo);
        },
      ).finally(() => {
        clock.writing = undefined;
      });
      await clock.writing;
    }
  }
}
