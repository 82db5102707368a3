import { SESSION_IDENTITY_CATEGORY, sessionIdentityDecider, sessionIdentityStreamName } from '../../domain/session-identity/decider.ts';
import type { SessionIdentityEvent } from '../../domain/session-identity/events.ts';
import type { SecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import { startResilientSubscription } from '../../infra/event-store/resilient-subscription.ts';
import { identityFromSeed, SEED_BYTES } from '../../infra/messenger/session/identity.ts';
import type { SessionIdentityOrigin, SessionIdentityStore, SessionIdentityWatch } from '../../infra/messenger/session/identity-store.ts';
import type { SessionConnectorLog } from '../../infra/messenger/session/session-connector.ts';
import { handleCommand } from '../commands/handle-command.ts';

/**
 * The bots' Session seeds in the event history (`SessionIdentityKept` on
 * `sessionidentity-<appMessengerId>`, domain/session-identity), sealed with the SecretBox of the
 * operator's secret key and bound to their app-messenger: every Relay instance sharing the history
 * (and, as they must, RELAY_SECRET_KEY) opens them, so any of them polls a bot's swarm and sends
 * as it, and a seed survives the loss of one instance's data directory. The sealed seed is
 * withheld from every public event stream (its field is `secretEncrypted`); the history keeps it
 * after its app is deleted, as it keeps a webhook's sealed secret.
 */
export class EventSessionIdentityStore implements SessionIdentityStore {
  constructor(
    private readonly store: EventStore,
    private readonly box: SecretBox,
    private readonly options: { readonly actor: string; readonly log: Pick<SessionConnectorLog, 'warn' | 'error'> },
  ) {}

  async all(): Promise<ReadonlyMap<string, Buffer>> {
    const seeds = new Map<string, Buffer>();
    let after = 0n;
    for (;;) {
      const page = await this.store.readAll({ after, limit: 500, filter: { categories: [SESSION_IDENTITY_CATEGORY], types: ['SessionIdentityKept'] } });
      for (const event of page) {
        const opened = this.openEvent(event);
        if (opened && !seeds.has(opened.appMessengerId)) seeds.set(opened.appMessengerId, opened.seed);
      }
      if (page.length < 500) return seeds;
      after = page.at(-1)!.globalPosition;
    }
  }

  async seedOf(appMessengerId: string): Promise<Buffer | undefined> {
    const { events } = await this.store.readStream(sessionIdentityStreamName(appMessengerId));
    const first = events[0];
    return first ? this.openEvent(first)?.seed : undefined;
  }

  async claim(appMessengerId: string, seed: Buffer, origin: SessionIdentityOrigin): Promise<Buffer> {
    if (seed.byteLength !== SEED_BYTES) throw new Error(`a Session seed is ${SEED_BYTES} bytes`);
    let kept: string | undefined;
    const result = await handleCommand(
      this.store,
      sessionIdentityStreamName(appMessengerId),
      sessionIdentityDecider,
      (state) => {
        kept = state.status === 'kept' ? state.secretEncrypted : undefined;
        if (kept !== undefined) return undefined; // it has one: the first one kept stays
        return {
          type: 'KeepSessionIdentity' as const,
          data: { appMessengerId, sessionId: identityFromSeed(seed).sessionId, secretEncrypted: this.seal(appMessengerId, seed), origin, now: new Date() },
        };
      },
      { actor: this.options.actor },
    );
    if (!result.ok) throw new Error(result.error.message);
    return kept === undefined ? Buffer.from(seed) : this.open(appMessengerId, kept);
  }

  async sendClockOf(appMessengerId: string): Promise<number> {
    const { events } = await this.store.readStream(sessionIdentityStreamName(appMessengerId));
    const state = (events as unknown as SessionIdentityEvent[]).reduce(sessionIdentityDecider.evolve, sessionIdentityDecider.initialState());
    return state.status === 'kept' ? state.sendClockUpTo : 0;
  }

  async advanceSendClock(appMessengerId: string, upTo: number): Promise<void> {
    const result = await handleCommand(
      this.store,
      sessionIdentityStreamName(appMessengerId),
      sessionIdentityDecider,
      { type: 'AdvanceSendClock', data: { appMessengerId, upTo, now: new Date() } },
      { actor: this.options.actor },
    );
    if (!result.ok) throw new Error(result.error.message);
  }

  /** Follows the category from its start: the seeds kept so far, then each new one (from any process). */
  async watch(onSeed: (appMessengerId: string, seed: Buffer) => void): Promise<SessionIdentityWatch> {
    let position = 0n;
    const subscription = await startResilientSubscription(this.store, {
      filter: { categories: [SESSION_IDENTITY_CATEGORY], types: ['SessionIdentityKept'] },
      resumeAfter: () => position,
      handler: (events) => {
        for (const event of events) {
          const opened = this.openEvent(event);
          if (opened) onSeed(opened.appMessengerId, opened.seed);
          position = event.globalPosition;
        }
      },
      onFailure: (error, retryInMs) =>
        this.options.log.warn({ component: 'session', reason: error instanceof Error ? error.message : String(error), retryInMs }, 'reading the Session identities failed; trying again'),
      minDelayMs: 500,
      maxDelayMs: 30_000,
    });
    return { catchUp: () => subscription.catchUp(), stop: () => subscription.stop() };
  }

  /** The seed of a recorded event, or undefined (logged, without the seed) when it does not open. */
  private openEvent(event: RecordedEvent): { appMessengerId: string; seed: Buffer } | undefined {
    const kept = event as unknown as SessionIdentityEvent;
    if (kept.type !== 'SessionIdentityKept') return undefined;
    const { data } = kept;
    try {
      return { appMessengerId: data.appMessengerId, seed: this.open(data.appMessengerId, data.secretEncrypted) };
    } catch (error) {
      this.options.log.error(
        { component: 'session', appMessengerId: data.appMessengerId, reason: error instanceof Error ? error.message : String(error) },
        'a Session identity in the history cannot be opened with this RELAY_SECRET_KEY; that bot is not served here',
      );
      return undefined;
    }
  }

  private seal(appMessengerId: string, seed: Buffer): string {
    return this.box.encrypt(JSON.stringify({ appMessengerId, seed: seed.toString('hex') }));
  }

  private open(appMessengerId: string, sealed: string): Buffer {
    const parsed = JSON.parse(this.box.decrypt(sealed)) as { appMessengerId?: unknown; seed?: unknown };
    // Bound to its app-messenger: a sealed seed copied onto another stream does not open there.
    if (parsed.appMessengerId !== appMessengerId) throw new Error('the sealed Session seed belongs to another app-messenger');
    if (typeof parsed.seed !== 'string' || !/^[0-9a-f]{32}$/.test(parsed.seed)) throw new Error('the sealed Session seed is damaged');
    return Buffer.from(parsed.seed, 'hex');
  }
}
