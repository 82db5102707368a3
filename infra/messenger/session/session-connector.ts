/**
 * The Session connector: Relay is its own Session client (no daemon). Each app-messenger's bot
 * identity is a Session seed Relay makes (or an operator imports) and keeps sealed; its address is
 * the Session ID. Messages go out as one-to-one Session messages stored in the contact's swarm;
 * each identity's own swarm is polled, more often while messages come and less often while idle,
 * and each text a contact wrote is handed to the gateway with its storage hash as the messenger's
 * own id, so the gateway records it once.
 *
 * Exactly once, across restarts: a message counts as handled only once the gateway recorded it
 * (`onInbound` resolved); until then it stays on the network (up to 14 days) and comes again on
 * the next poll. After a restart the nodes send everything they still hold (no `last_hash` yet):
 * the gateway drops those it has (same hash, same message id).
 *
 * Identities: each seed is kept once per app-messenger in the identity store (the event history in
 * Relay, shared by every instance); the connector follows the store, so an identity another
 * instance provisions, or an operator imports with the CLI, is polled and sent from here too.
 *
 * What contacts' apps send that is not text (typing, receipts, reactions, attachments, calls,
 * group invites) is never handed on: it is counted by kind (`onSkipped`, /metrics) and, when a
 * person wrote it, logged once per kind and bot without its content (docs/messengers.md).
 *
 * Sending: every message of a bot carries a timestamp later than the bot's last one (SendClock,
 * kept across restarts), the bot's display name (the app's name) in its profile, and the
 * conversation's disappearing-messages setting as the contact's app last sent it. A message's
 * timestamp is kept in its history before its first hand-off (`stamp`, the delivery worker) and
 * every hand-off carries it, so a retry, or another instance's after this one's went unrecorded,
 * is dropped by the contact's app as a repeat when the first arrived. Within this process a
 * retried message is also sent byte for byte again (the same storage hash).
 *
 * Groups (Session's groups v2) are not supported: a group delivery fails permanently.
 */
import { createHash } from 'node:crypto';
import { rejectionOf } from '../messenger-rules.ts';
import { BotIdentityMissingError, handOffOrWithdraw, type DaemonHealth, type DeliveryResult, type InboundFromContact, type MessengerConnector, type OutboundDelivery } from '../port.ts';
import { identityFromSeed, newSeed, seedFromHex, type SessionIdentity } from './identity.ts';
import type { SessionIdentityStore, SessionIdentityWatch } from './identity-store.ts';
import { mnemonicToSeed } from './mnemonic.ts';
import { SessionNetworkError, SessionRefusedError, SessionStorageClient, TTL_MAX_MS, type RetrievedMessage, type SessionStorageOptions } from './storage-client.ts';
import { SendClock } from './send-clock.ts';
import { buildTextMessage, openIncoming, UNSUPPORTED_KINDS, type ControlKind, type Expiration, type UnsupportedKind } from './wire.ts';
import { SessionIdentityTakenError, SessionUnavailableError } from './session-errors.ts';

/** What an inbound Session message Relay does not hand on was: `undecodable` when it failed a check. */
export type SkippedKind = ControlKind | UnsupportedKind | 'undecodable';

export interface SessionConnectorLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface SessionConnectorOptions {
  /** The storage client, or the options to make one (seed nodes, bounds). */
  readonly storage: SessionStorageClient | SessionStorageOptions;
  readonly identities: SessionIdentityStore;
  readonly log: SessionConnectorLog;
  /** Poll interval: `minMs` while messages come, doubled while idle up to `maxMs`. */
  readonly poll?: { readonly minMs: number; readonly maxMs: number };
  /** How long a sent message stays on the network (ms); the servers allow 10 s to 14 days. */
  readonly ttlMs?: number;
  /** The profile name contacts see when a delivery names none (OutboundDelivery.senderName). */
  readonly displayName?: string;
  /** Told of each inbound message not handed on, by kind (Relay counts them in /metrics). */
  readonly onSkipped?: (kind: SkippedKind) => void;
  /** How far ahead of its stamps a bot's send clock is kept (ms; default 3000). */
  readonly sendClockLeadMs?: number;
}

/** A message as first built for a delivery: sent again byte for byte when its attempt is retried. */
interface Prepared {
  readonly timestamp: number;
  readonly data: Buffer;
}

/** Messages kept for their retries, and conversations whose setting is remembered (the oldest go first). */
const MAX_PREPARED = 10_000;
const MAX_CONVERSATIONS = 100_000;
/** Kinds of message a person wrote, or that failed a check, which a bot's owner should hear of (once per kind and bot). */
const WORTH_A_LOG: ReadonlySet<SkippedKind> = new Set<SkippedKind>([...UNSUPPORTED_KINDS, 'undecodable']);
const MAX_LOGGED = 10_000;

interface Held {
  readonly appMessengerId: string;
  readonly identity: SessionIdentity;
}

interface Poller {
  timer: NodeJS.Timeout | undefined;
  delayMs: number;
  running: boolean;
  failures: number;
}

const UNREACHABLE = 'The Session network cannot be reached (no seed or service node answered)';
const NO_PATH = 'The Session network cannot be reached (no onion path can be built)';

export class SessionConnector implements MessengerConnector {
  readonly messenger = 'session' as const;
  readonly storage: SessionStorageClient;
  private readonly ownsStorage: boolean;
  private readonly bySessionId = new Map<string, Held>();
  private readonly byAppMessenger = new Map<string, Held>();
  private readonly pollers = new Map<string, Poller>();
  private loaded: Promise<void> | undefined;
  private watching: SessionIdentityWatch | undefined;
  private onInbound: ((message: InboundFromContact) => Promise<void>) | undefined;
  private closed = false;
  private readonly pollMin: number;
  private readonly pollMax: number;
  private readonly clock: SendClock;
  private readonly prepared = new Map<string, Prepared>();
  /** Bot Session ID ‖ contact → the conversation's disappearing-messages setting. */
  private readonly conversations = new Map<string, Expiration>();
  /** Bot ‖ kind already logged. */
  private readonly logged = new Set<string>();

  constructor(private readonly options: SessionConnectorOptions) {
    this.ownsStorage = !(options.storage instanceof SessionStorageClient);
    this.storage = options.storage instanceof SessionStorageClient ? options.storage : new SessionStorageClient(options.storage);
    this.pollMin = options.poll?.minMs ?? 2_000;
    this.pollMax = Math.max(this.pollMin, options.poll?.maxMs ?? 16_000);
    this.clock = new SendClock(options.identities, options.sendClockLeadMs);
  }

  /** The app-messenger's Session ID: its seed when Relay holds one, else a new seed, kept sealed. */
  async provision(appMessengerId: string): Promise<string> {
    await this.ready();
    const existing = this.byAppMessenger.get(appMessengerId);
    if (existing) return existing.identity.sessionId;
    // Another instance may keep one at the same moment: the store keeps the first, and says which.
    const held = await this.options.identities.claim(appMessengerId, newSeed(), 'new');
    return this.learn(appMessengerId, held);
  }

  /**
   * Makes an operator's existing Session account the bot identity of an app-messenger: its 13-word
   * recovery phrase or its 32-hex-character seed. Returns the Session ID (the app-messenger's
   * address, which the caller records). An app-messenger keeps the identity it has: importing
   * another one is refused (SessionIdentityTakenError); the same one again is no error.
   */
  async importIdentity(appMessengerId: string, phraseOrSeed: string): Promise<string> {
    const trimmed = phraseOrSeed.trim();
    const seed = /^[0-9a-fA-F]{32}$/.test(trimmed) ? seedFromHex(trimmed) : mnemonicToSeed(trimmed);
    await this.ready();
    const held = await this.options.identities.claim(appMessengerId, seed, 'imported');
    if (!held.equals(seed)) {
      const sessionId = this.learn(appMessengerId, held);
      throw new SessionIdentityTakenError(`The app-messenger ${appMessengerId} already has the Session identity ${sessionId}`);
    }
    return this.learn(appMessengerId, held);
  }

  async deliver(delivery: OutboundDelivery): Promise<DeliveryResult> {
    const rejection = rejectionOf('session', delivery.contactId, delivery.text);
    if (rejection) return { ok: false, permanent: true, reason: rejection };
    if (delivery.groupId !== undefined) return { ok: false, permanent: true, reason: 'Session groups are not supported by Relay' };
    const held = await this.heldFor(delivery);
    const recipient = delivery.contactId.toLowerCase();
    const key = preparedKey(delivery);
    try {
      let prepared = this.prepared.get(key);
      if (prepared && delivery.timestamp !== undefined && prepared.timestamp !== delivery.timestamp) prepared = undefined;
      if (!prepared) {
        const timestamp = delivery.timestamp ?? (await this.stampFor(held, recipient));
        const displayName = delivery.senderName ?? this.options.displayName;
        const expiration = this.conversations.get(conversationKey(held.identity.sessionId, recipient));
        const data = buildTextMessage({
          sender: held.identity,
          recipient,
          text: delivery.text,
          timestamp,
          ...(displayName !== undefined ? { displayName } : {}),
          ...(expiration !== undefined ? { expiration } : {}),
        });
        prepared = { timestamp, data };
        remember(this.prepared, key, prepared, MAX_PREPARED);
      }
      handOffOrWithdraw(delivery);
      await this.storage.store(recipient, prepared.data, { ttlMs: this.options.ttlMs ?? TTL_MAX_MS, timestamp: prepared.timestamp });
      this.prepared.delete(key);
      return { ok: true };
    } catch (error) {
      if (error instanceof SessionNetworkError) {
        if (error.lastStatus === undefined) throw new SessionUnavailableError(UNREACHABLE);
        return { ok: false, permanent: false, reason: notTakenNow(error.lastStatus) };
      }
      if (error instanceof SessionRefusedError) {
        if (error.status === 406) return { ok: false, permanent: false, reason: "The Session network refused the message's time (HTTP 406): the clock is off" };
        this.prepared.delete(key);
        return { ok: false, permanent: true, reason: `The Session network refused the message (HTTP ${error.status})` };
      }
      throw error;
    }
  }

  /**
   * The timestamp the delivery's message would carry now (the delivery worker keeps it in the
   * message's history, and every hand-off of the message carries it: MessengerConnector.stamp).
   */
  async stamp(delivery: OutboundDelivery): Promise<number> {
    const held = await this.heldFor(delivery);
    try {
      return await this.stampFor(held, delivery.contactId.toLowerCase());
    } catch (error) {
      if (!(error instanceof SessionNetworkError)) throw error;
      if (error.lastStatus === undefined) throw new SessionUnavailableError(UNREACHABLE);
      throw new Error(notTakenNow(error.lastStatus), { cause: error });
    }
  }

  /** The bot identity a delivery is sent from, as this Relay holds it. */
  private async heldFor(delivery: OutboundDelivery): Promise<Held> {
    await this.ready();
    let held = this.bySessionId.get(delivery.from);
    if (!held && this.watching) {
      // Kept a moment ago by another instance (or the CLI): read the store up to now.
      await this.watching.catchUp();
      held = this.bySessionId.get(delivery.from);
    }
    if (!held) throw new BotIdentityMissingError("This Relay does not hold the bot's Session identity");
    return held;
  }

  /** The bot's next timestamp: the network's time (learnt with the recipient's swarm), after the bot's last stamp. */
  private async stampFor(held: Held, recipient: string): Promise<number> {
    await this.storage.swarmOf(recipient);
    return this.clock.stamp(held.appMessengerId, this.storage.networkNow());
  }

  /** Reachable when a service node answers `info` (which also resets the clock offset). */
  async checkHealth(): Promise<DaemonHealth> {
    await this.ready();
    await this.watching?.catchUp();
    try {
      await this.storage.syncClock();
    } catch (error) {
      if (!(error instanceof SessionNetworkError)) throw error;
      // Why, in one stable line (the details, node addresses included, are in the log).
      return { reachable: false, reason: this.storage.health().transportProblem !== undefined ? NO_PATH : UNREACHABLE };
    }
    return { reachable: true, identities: new Set(this.bySessionId.keys()) };
  }

  async listen(onInbound: (message: InboundFromContact) => Promise<void>): Promise<void> {
    await this.ready();
    this.onInbound = onInbound;
    for (const sessionId of this.bySessionId.keys()) this.startPoller(sessionId);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const sessionId of [...this.pollers.keys()]) this.stopPoller(sessionId);
    await this.loaded?.catch(() => undefined);
    await this.watching?.stop();
    if (this.ownsStorage) this.storage.close();
  }

  /** The bot identities held (Session IDs), for tests and the CLI. */
  async sessionIds(): Promise<string[]> {
    await this.ready();
    return [...this.bySessionId.keys()];
  }

  /** Loads the seeds held; with a store that can be followed, follows it from then on. */
  private ready(): Promise<void> {
    if (this.closed && !this.loaded) return Promise.reject(new SessionUnavailableError('The Session connector is closed'));
    this.loaded ??= (async () => {
      const { identities } = this.options;
      if (identities.watch) {
        this.watching = await identities.watch((appMessengerId, seed) => void this.learn(appMessengerId, seed));
        await this.watching.catchUp();
        return;
      }
      for (const [appMessengerId, seed] of await identities.all()) this.learn(appMessengerId, seed);
    })().catch((error: unknown) => {
      // The store could not be read (it is away): the next call tries again.
      this.loaded = undefined;
      throw error;
    });
    return this.loaded;
  }

  /** Holds the identity of an app-messenger (polled once listening); returns its Session ID. */
  private learn(appMessengerId: string, seed: Buffer): string {
    const previous = this.byAppMessenger.get(appMessengerId);
    if (previous?.identity.seed.equals(seed)) return previous.identity.sessionId;
    if (previous) {
      this.bySessionId.delete(previous.identity.sessionId);
      this.stopPoller(previous.identity.sessionId);
    }
    const held = { appMessengerId, identity: identityFromSeed(seed) };
    this.bySessionId.set(held.identity.sessionId, held);
    this.byAppMessenger.set(appMessengerId, held);
    if (this.onInbound) this.startPoller(held.identity.sessionId);
    return held.identity.sessionId;
  }

  private startPoller(sessionId: string): void {
    if (this.closed || this.pollers.has(sessionId)) return;
    const poller: Poller = { timer: undefined, delayMs: this.pollMin, running: false, failures: 0 };
    this.pollers.set(sessionId, poller);
    this.schedule(sessionId, poller, 0);
  }

  private stopPoller(sessionId: string): void {
    const poller = this.pollers.get(sessionId);
    if (poller?.timer) clearTimeout(poller.timer);
    this.pollers.delete(sessionId);
  }

  private schedule(sessionId: string, poller: Poller, delayMs: number): void {
    if (this.closed || this.pollers.get(sessionId) !== poller) return;
    poller.timer = setTimeout(() => void this.pollOnce(sessionId, poller), delayMs);
    poller.timer.unref?.();
  }

  private async pollOnce(sessionId: string, poller: Poller): Promise<void> {
    const held = this.bySessionId.get(sessionId);
    if (!held || poller.running) return;
    poller.running = true;
    let next: number;
    try {
      const result = await this.storage.poll(held.identity, (message) => this.handle(held, message));
      if (result.malformed > 0) this.options.log.warn({ component: 'session', malformed: result.malformed }, 'a storage server answered entries that are not messages');
      if (poller.failures > 0) this.options.log.info({ component: 'session' }, 'polling the Session network works again');
      poller.failures = 0;
      // Never sooner than pollMin: a node answering `more: true` (with nothing, or with junk) cannot make polling spin.
      if (result.more || result.handled > 0) next = this.pollMin;
      else next = Math.min(this.pollMax, poller.delayMs * 2);
      poller.delayMs = Math.max(this.pollMin, next);
    } catch (error) {
      poller.failures++;
      // One line when polling starts failing, then one every tenth failure.
      if (poller.failures === 1 || poller.failures % 10 === 0) {
        this.options.log.warn({ component: 'session', failures: poller.failures, reason: error instanceof Error ? error.message : String(error) }, 'polling the Session network failed; trying again');
      }
      next = Math.min(this.pollMax, this.pollMin * 2 ** Math.min(poller.failures, 10));
    } finally {
      poller.running = false;
    }
    this.schedule(sessionId, poller, next);
  }

  /** Opens one retrieved message; resolves once the gateway recorded it (or it is nothing to record). */
  private async handle(held: Held, message: RetrievedMessage): Promise<void> {
    const opened = openIncoming(held.identity, message.data);
    if (opened.kind === 'rejected') return this.skipped(held, 'undecodable', opened.reason);
    if (opened.expiration !== undefined) remember(this.conversations, conversationKey(held.identity.sessionId, opened.sender), opened.expiration, MAX_CONVERSATIONS);
    if (opened.kind === 'control' || opened.kind === 'unsupported') return this.skipped(held, opened.what);
    for (const lost of opened.lost ?? []) this.skipped(held, lost);
    if (!this.onInbound) return;
    await this.onInbound({
      messenger: 'session',
      to: held.identity.sessionId,
      contactId: opened.sender,
      text: opened.text,
      timestamp: opened.timestamp,
      externalId: opened.replayKey,
      formerExternalId: message.hash,
    });
  }

  /** Counts a message not handed on; one a person wrote is logged once per kind and bot, without its content. */
  private skipped(held: Held, kind: SkippedKind, reason?: string): void {
    this.options.onSkipped?.(kind);
    if (!WORTH_A_LOG.has(kind)) return;
    const key = `${held.appMessengerId}\u0000${kind}`;
    if (this.logged.has(key) || this.logged.size >= MAX_LOGGED) return;
    this.logged.add(key);
    this.options.log.warn(
      { component: 'session', appMessengerId: held.appMessengerId, kind, ...(reason !== undefined ? { reason } : {}) },
      kind === 'undecodable'
        ? 'skipped a Session message that failed a check (counted in relay_session_inbound_skipped_total; said once per bot)'
        : 'a contact sent a Session message Relay cannot hand on (counted in relay_session_inbound_skipped_total; said once per kind and bot)',
    );
  }
}

const notTakenNow = (status: number): string => `The Session network did not take the message now (HTTP ${status})`;

/** One message, or one part of a split message: its retries are sent byte for byte again. */
function preparedKey(delivery: OutboundDelivery): string {
  return `${delivery.messageId}\u0000${createHash('sha256').update(delivery.text).digest('base64url')}`;
}

function conversationKey(bot: string, contact: string): string {
  return `${bot}\u0000${contact}`;
}

/** Sets a key as the newest of a bounded map. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value!);
}
