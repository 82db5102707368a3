import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { signingSecretsAt } from '../../domain/app/events.ts';
import { inboundDecider, inboundStreamName } from '../../domain/inbound/decider.ts';
import type { Broker, ConsumedRecord } from '../../infra/broker/port.ts';
import type { SecretBox } from '../../infra/crypto/secret-box.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { postWebhook, type WebhookOutcome } from '../../infra/net/webhook-client.ts';
import type { LookupFunction } from 'node:net';
import type { AppView, AppsProjection } from '../../projections/apps/apps-projection.ts';
import { openInboundRecords, type OpenedInbound } from '../api/polled-messages.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { inboundAppOf, topics } from '../services/topology.ts';
import type { RelayMetrics } from '../services/metrics.ts';

export interface WebhookSettings {
  readonly timeoutMs: number;
  /** Attempts before a message is given up on (a dead letter). */
  readonly maxAttempts: number;
  /** The pause after the first failed attempt; it doubles up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /**
   * The dispatcher's tick: retries whose backoff ended, queues the broker could not vouch were
   * empty. On a broker that tells arrivals (Kafka) every webhook app's queue is looked at when the
   * apps change and every `sweepMs`; on one that does not (the embedded broker), at every
   * tick (messages from before a start, from other processes).
   */
  readonly idlePollMs: number;
  /** On a broker that tells arrivals: how often a round looks at every webhook app anyway (default 60 s). */
  readonly sweepMs?: number;
  readonly allowLocal: boolean;
}

export interface WebhookDispatcherDeps {
  readonly store: EventStore;
  readonly broker: Broker;
  readonly sealer: MessageSealer;
  readonly secrets: SecretBox;
  readonly apps: AppsProjection;
  readonly settings: WebhookSettings;
  readonly metrics?: Pick<RelayMetrics, 'webhookAttempts' | 'webhookFailures' | 'webhooksAbandoned'>;
  readonly log: Logger;
  readonly lookup?: LookupFunction;
}

export interface WebhookDispatcher {
  /** A message may have been queued for this app. */
  wake(appId: string): void;
  stop(): Promise<void>;
}

/**
 * On a broker that tells arrivals, a round looks at every webhook app this often anyway: a queue
 * another process made and published to while this one held no follow of it (a role's handover)
 * tells no arrival here.
 */
const SWEEP_MS = 60_000;

/** At most this many apps' webhooks are called at once. */
const PARALLEL_APPS = 8;
/**
 * At most this many of them belong to one user: a user whose receivers are slow (or hostile) holds
 * a quarter of the slots at most, and every other user's apps find one free.
 */
const PARALLEL_APPS_PER_USER = 2;

class NotTaken extends Error {
  constructor(readonly outcome: Extract<WebhookOutcome, { ok: false }>) {
    super(outcome.reason);
  }
}

/** What a delivery is signed and authenticated with, in plain text (decrypted for the attempt). */
export interface WebhookSecrets {
  /** The bearer/header secret that authenticates Relay to the receiver (`webhookAuthSecret`). */
  readonly auth: string | null;
  /** The Standard Webhooks signing secrets (`whsec_…`): the current one, and the one it replaced while it overlaps. */
  readonly signing: readonly string[];
}

/**
 * The headers of a delivery (docs/webhooks.md): the Standard Webhooks id, timestamp and signature
 * (one `v1,<base64>` per signing secret, space-separated, as the specification lists them), and the
 * bearer or named header that authenticates Relay, which is never the signing secret. An app made
 * before signing secrets existed and never given one signs with the UTF-8 bytes of its auth secret,
 * as before.
 */
export const webhookHeaders = (app: AppView, secrets: WebhookSecrets, messageId: string, body: string, now: Date): Record<string, string> => {
  const headers: Record<string, string> = { 'user-agent': 'Relay-Webhooks', 'webhook-id': messageId, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)) };
  if (secrets.signing.length > 0) headers['webhook-signature'] = secrets.signing.map((secret) => new Webhook(secret).sign(messageId, now, body)).join(' ');
  // Keyed with the secret's UTF-8 bytes: the library would take the low byte of each UTF-16 unit of a string.
  else if (secrets.auth !== null) headers['webhook-signature'] = new Webhook(Buffer.from(secrets.auth, 'utf8'), { format: 'raw' }).sign(messageId, now, body);
  if (secrets.auth === null) return headers;
  if (app.settings.webhookAuthType === 'bearer') headers.authorization = `Bearer ${secrets.auth}`;
  else if (app.settings.webhookAuthType === 'header' && app.settings.webhookAuthHeaderName) headers[app.settings.webhookAuthHeaderName.toLowerCase()] = secrets.auth;
  return headers;
};

/**
 * Delivers the inbound messages of apps whose `deliveryType` is `webhook`: each message of the
 * app's queue, oldest first, is POSTed to its `webhookUrl` as the polled-message JSON, and leaves
 * the queue only once the receiver answered 2xx (at least once: a receiver may see a message
 * again after a crash, with the same `webhook-id`). A receiver that fails holds its app's queue
 * (order is kept) and is tried again after 1 s, 2 s, 4 s … up to `maxDelayMs`; after
 * `maxAttempts` the message is given up on: it leaves the queue, `InboundWebhookAbandoned` is
 * recorded, and its body is forgotten. An app switched back to `poll` keeps its queue for polls.
 */
export const startWebhookDispatcher = (deps: WebhookDispatcherDeps): WebhookDispatcher => {
  const { settings, log } = deps;
  const state = new Map<string, { attempts: number; notBefore: number; failedAt?: number; lastOutcome?: Extract<WebhookOutcome, { ok: false }> }>();
  /** The owner asked for a retry after the last failure (AppWebhookRetryRequested, any process): the backoff is over. */
  const retryAsked = (app: AppView): boolean => {
    const own = state.get(app.id);
    return own?.failedAt !== undefined && app.webhookRetryRequestedAt !== undefined && Date.parse(app.webhookRetryRequestedAt) > own.failedAt;
  };
  const running = new Map<string, Promise<void>>();
  /** Apps a record was published to, or arrived for: looked at first, in the next round. */
  const woken = new Set<string>();
  /** Apps found due that waited for a slot: looked at in the next round, woken or not. */
  const waiting = new Set<string>();
  /** Apps whose last attempt failed (their backoff, or the owner's retry, ends it): looked at every tick. */
  const retrying = new Set<string>();
  /** Apps drained to a queue the broker could not vouch was empty: looked at in the next tick (Kafka's arrivals cannot tell of them). */
  const lookAgain = new Set<string>();
  /** The broker tells records that reach this process (Kafka): no round over every app each tick. */
  const arrivals = deps.broker.watchArrivals !== undefined;
  let stopped = false;

  const serves = (app: AppView | undefined): app is AppView => app !== undefined && app.settings.deliveryType === 'webhook' && app.settings.status === 'active' && Boolean(app.settings.webhookUrl);
  /**
   * The apps it serves, each with its inbound queue's name, worked out once per change of the apps
   * model (session 31: the timer's round built three arrays and 2,000 queue names every second at
   * 2,000 webhook apps, most of the idle pipeline thread's garbage).
   */
  let served: { readonly revision: number; readonly apps: ReadonlyArray<readonly [AppView, string]> } = { revision: -1, apps: [] };
  const webhookApps = (): ReadonlyArray<readonly [AppView, string]> => {
    if (served.revision !== deps.apps.revision) served = { revision: deps.apps.revision, apps: deps.apps.webhookApps().filter(serves).map((app) => [app, topics.inbound(app.id)] as const) };
    return served.apps;
  };
  /** The apps of these sets it still serves (one that is deleted, paused or no longer a webhook app since leaves them). */
  const appsIn = (sets: ReadonlyArray<Set<string>>): AppView[] => {
    const apps = new Map<string, AppView>();
    for (const set of sets)
      for (const appId of set) {
        if (apps.has(appId)) continue;
        const app = deps.apps.app(appId);
        if (serves(app)) apps.set(appId, app);
        else set.delete(appId);
      }
    return [...apps.values()];
  };

  const secretsOf = (app: AppView, now: Date): WebhookSecrets => ({
    auth: app.settings.webhookAuthSecretEncrypted === null ? null : deps.secrets.decrypt(app.settings.webhookAuthSecretEncrypted),
    signing: signingSecretsAt(app.settings, now).map((secret) => deps.secrets.decrypt(secret)),
  });

  /** Records an attempt on the message's stream (the dashboard's webhook attempts); a failure to record it does not change the delivery. */
  const record = async (app: AppView, messageId: string, attempt: number, outcome: WebhookOutcome, durationMs: number) => {
    const data = { messageId, appId: app.id, attempt, ok: outcome.ok, status: outcome.status, reason: outcome.ok ? null : outcome.reason, durationMs, now: new Date() };
    await handleCommand(deps.store, inboundStreamName(messageId), inboundDecider, { type: 'RecordWebhookAttempt', data }, { actor: 'system:webhooks' }).catch((error: unknown) =>
      log.warn({ err: error, appId: app.id, messageId }, 'webhook attempt not recorded'),
    );
  };

  const post = async (app: AppView, opened: OpenedInbound, attempt: number): Promise<void> => {
    const body = JSON.stringify(opened.message);
    const now = new Date();
    const started = performance.now();
    const outcome = await postWebhook({
      url: app.settings.webhookUrl!,
      headers: webhookHeaders(app, secretsOf(app, now), opened.message.messageId, body, now),
      body,
      timeoutMs: settings.timeoutMs,
      allowLocal: settings.allowLocal,
      ...(deps.lookup ? { lookup: deps.lookup } : {}),
    });
    await record(app, opened.message.messageId, attempt, outcome, Math.round(performance.now() - started));
    if (!outcome.ok) {
      deps.metrics?.webhookAttempts.inc({ outcome: 'failed' });
      deps.metrics?.webhookFailures.inc({ kind: outcome.kind });
      throw new NotTaken(outcome);
    }
    deps.metrics?.webhookAttempts.inc({ outcome: 'delivered' });
  };

  /** Gives the message at the head of the queue up: it leaves the queue, recorded as abandoned. */
  const abandon = async (app: AppView, last: Extract<WebhookOutcome, { ok: false }>, attempts: number) => {
    let gone: { messageId: string; keyId: string | undefined } | undefined;
    await deps.broker.pop(topics.inbound(app.id), 1, {
      accept: async (records: readonly ConsumedRecord[]) => {
        const value = JSON.parse(records[0]!.value) as { messageId: string; keyId?: string };
        gone = { messageId: value.messageId, keyId: value.keyId };
        await handleCommand(
          deps.store,
          inboundStreamName(value.messageId),
          inboundDecider,
          { type: 'AbandonWebhookDelivery', data: { messageId: value.messageId, appId: app.id, attempts, lastStatus: last.status, reason: last.reason, now: new Date() } },
          { actor: 'system:webhooks' },
        );
      },
    });
    deps.metrics?.webhooksAbandoned.inc();
    if (gone?.keyId) await deps.store.keys.release([gone.keyId]);
    log.warn({ appId: app.id, messageId: gone?.messageId, attempts, reason: last.reason }, 'webhook delivery abandoned');
  };

  /** The message that failed left the queue (delivered, given up on, or gone otherwise): no retry is pending. */
  const settled = (appId: string, own: { attempts: number; lastOutcome?: unknown; failedAt?: number }) => {
    own.attempts = 0;
    delete own.lastOutcome;
    delete own.failedAt;
    retrying.delete(appId);
  };

  /**
   * Delivers the app's queue until it is empty, the receiver fails, or the dispatcher stops.
   * Resolves whether it tried anything (an empty queue is no work).
   */
  const drain = async (app: AppView): Promise<boolean> => {
    let worked = false;
    const own = state.get(app.id) ?? { attempts: 0, notBefore: 0 };
    state.set(app.id, own);
    if (retryAsked(app)) {
      own.notBefore = 0;
      delete own.failedAt;
    }
    while (!stopped && Date.now() >= own.notBefore) {
      if (own.lastOutcome && own.attempts >= settings.maxAttempts) {
        await abandon(app, own.lastOutcome, own.attempts);
        settled(app.id, own);
        continue;
      }
      let delivered: OpenedInbound | undefined;
      let popped: ConsumedRecord[];
      try {
        popped = await deps.broker.pop(topics.inbound(app.id), 1, {
          accept: async (records) => {
            const opened = (await openInboundRecords(deps, records)).get(records[0]!.offset);
            // A body forgotten (retention passed): nothing to deliver; it leaves the queue.
            if (opened) await post(app, opened, own.attempts + 1);
            delivered = opened;
          },
        });
      } catch (error) {
        if (!(error instanceof NotTaken)) throw error;
        worked = true;
        own.attempts++;
        own.lastOutcome = error.outcome;
        retrying.add(app.id);
        own.failedAt = Date.now();
        own.notBefore = own.attempts >= settings.maxAttempts ? 0 : Date.now() + Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** (own.attempts - 1));
        log.info({ appId: app.id, attempts: own.attempts, reason: error.outcome.reason }, 'webhook did not take a message; trying again');
        if (own.notBefore === 0) continue;
        return worked;
      }
      if (popped.length === 0) {
        // The message that failed left the queue otherwise (its retention passed, the queue was
        // emptied): nothing is left to retry. Kept failing, the app was drained at every round for
        // ever (session 31: most of an idle pipeline's garbage at 2,000 webhook apps).
        settled(app.id, own);
        return worked;
      }
      worked = true;
      settled(app.id, own);
      if (delivered?.keyId) await deps.store.keys.release([delivered.keyId]).catch((error: unknown) => log.warn({ err: error }, 'webhooks: data key not released'));
    }
    return worked;
  };

  /**
   * Whether an app's queue is drained in this round: not being drained, past its backoff (or a
   * retry was asked), and not known to be empty. A queue the broker knows is empty is not drained
   * (no pop, no promise): the round's cost is its webhook apps with messages.
   */
  const isDue = (app: AppView, now: number, inbound: string = topics.inbound(app.id)): boolean => {
    if (running.has(app.id)) return false;
    const own = state.get(app.id);
    if (now < (own?.notBefore ?? 0) && !retryAsked(app)) return false;
    return woken.has(app.id) || own?.lastOutcome !== undefined || deps.broker.knownEmpty?.(inbound) !== true;
  };

  /** Inbound queues of webhook apps the broker was asked to follow (Broker.follow), and those it is following now. */
  const announced = new Set<string>();
  const following = new Set<string>();
  /**
   * Asks the broker to follow the queues of webhook apps it was not asked about yet, all at once;
   * their apps are drained once that is done. (Session 36: on Kafka each first pop of a queue then
   * restarted the tail's consumer, a few seconds each at 2,000 followed queues, 8 pops at a time:
   * a Relay with 2,000 webhook apps spent a third of a core for many minutes after each start. The
   * tail no longer restarts, session 37, but one lookup for all is still less than one each.)
   */
  const followNew = () => {
    if (deps.broker.follow === undefined) return;
    const fresh: string[] = [];
    for (const [, inbound] of webhookApps()) if (!announced.has(inbound)) fresh.push(inbound);
    if (fresh.length === 0) return;
    for (const inbound of fresh) {
      announced.add(inbound);
      following.add(inbound);
    }
    void deps.broker
      .follow(fresh)
      .catch((error: unknown) => log.warn({ err: error, queues: fresh.length }, 'webhooks: queues not followed at once; each is followed at its first drain'))
      .finally(() => {
        for (const inbound of fresh) following.delete(inbound);
        schedule('full');
      });
  };

  /** Apps being served per user. */
  const runningPerUser = new Map<string, number>();
  /** The apps model's revision at the last round over every app (a change asks for one on a broker that tells arrivals). */
  let fullRevision = -1;
  let fullAt = 0;
  const sweepMs = settings.sweepMs ?? SWEEP_MS;
  /**
   * A round over every webhook app (`full`) or over those known to want a look: `woken` (a record
   * published to them or arrived for them, and those waiting for a slot), `tick` (those, plus the
   * apps retrying and those whose queue the broker could not vouch was empty). On a broker that
   * does not tell arrivals every tick is a full round. Session 30: every published record of any
   * app started a round over every webhook app; 2,000 webhook apps and a backlog being published
   * took 40 % of the pipeline thread. Issue 49: on Kafka the tick's full round over 2,000 webhook
   * apps was ~0.7 % of a core at rest; the tail's arrivals now tell which queues to look at.
   */
  const round = (kind: 'full' | 'tick' | 'woken') => {
    if (stopped) return;
    const now = Date.now();
    const full = kind === 'full' || (kind === 'tick' && (!arrivals || deps.apps.revision !== fullRevision || now - fullAt >= sweepMs));
    if (full) {
      fullRevision = deps.apps.revision;
      fullAt = now;
      followNew();
    }
    const due: AppView[] = [];
    if (full) {
      for (const [app, inbound] of webhookApps()) if (!following.has(inbound) && isDue(app, now, inbound)) due.push(app);
    } else {
      const looked = appsIn(kind === 'tick' ? [woken, waiting, retrying, lookAgain] : [woken, waiting]);
      if (kind === 'tick') lookAgain.clear();
      for (const app of looked) if (!following.has(topics.inbound(app.id)) && isDue(app, now)) due.push(app);
    }
    // Woken apps first, then the apps of the users served least right now, PARALLEL_APPS at a time.
    const busy = (app: AppView) => runningPerUser.get(app.userId) ?? 0;
    if (due.length > 1) due.sort((a, b) => Number(woken.has(b.id)) - Number(woken.has(a.id)) || busy(a) - busy(b));
    waiting.clear();
    for (const app of due) {
      if (running.size >= PARALLEL_APPS || busy(app) >= PARALLEL_APPS_PER_USER) {
        waiting.add(app.id);
        continue;
      }
      woken.delete(app.id);
      runningPerUser.set(app.userId, busy(app) + 1);
      const run = drain(app)
        .catch((error: unknown) => {
          log.error({ err: error, appId: app.id }, 'webhook delivery failed; trying again');
          return true;
        })
        .then((worked) => {
          running.delete(app.id);
          const left = busy(app) - 1;
          if (left > 0) runningPerUser.set(app.userId, left);
          else runningPerUser.delete(app.userId);
          const vouched = deps.broker.knownEmpty?.(topics.inbound(app.id)) === true;
          // No arrival will tell of a record this look could not see: the next tick looks again.
          if (arrivals && !vouched && !retrying.has(app.id)) lookAgain.add(app.id);
          // A slot is free: an app waiting for one need not wait for the next tick, if this one
          // did work or its queue is now known to be empty (so the next round passes it by). A slot
          // that found an empty queue the broker cannot vouch for waits for the tick: looking again
          // at once would spin. (Session 31: after a start, 2,000 webhook apps whose queues were
          // not yet known to be empty were looked at 8 a tick, four minutes of full rounds.)
          if ((waiting.size > 0 && (worked || vouched)) || woken.has(app.id)) schedule('woken');
        });
      running.set(app.id, run);
    }
  };

  /** The round asked for next (a full one covers the woken apps too), run once in the next turn however often it is asked. The timer's tick runs its own. */
  let pending: 'full' | 'woken' | undefined;
  const schedule = (kind: 'full' | 'woken') => {
    if (pending === 'full' || pending === kind) return;
    const first = pending === undefined;
    pending = kind;
    if (first)
      setImmediate(() => {
        const asked = pending!;
        pending = undefined;
        round(asked);
      });
  };

  const timer = setInterval(() => round('tick'), settings.idlePollMs);
  timer.unref();
  schedule('full');
  const unwatch = deps.broker.watchArrivals?.((topic) => {
    const appId = inboundAppOf(topic);
    if (appId !== undefined) wake(appId);
  });

  /** A record may have been queued for this app: it is looked at in the next round. */
  const wake = (appId: string) => {
    // Records of apps it does not serve (delivered by poll, paused) are not its own; a webhook app the read model does not know yet is found by the next full round.
    if (!serves(deps.apps.app(appId))) return;
    woken.add(appId);
    schedule('woken');
  };

  return {
    wake,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      unwatch?.();
      await Promise.all(running.values());
    },
  };
};
