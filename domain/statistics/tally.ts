import type { DeliveryEvent } from '../delivery/events.ts';
import type { InboundEvent } from '../inbound/events.ts';
import type { SendBatchEvent } from '../send-batch/events.ts';

/**
 * What the outbound and inbound message events add to an app-messenger's statistics. Pure: one
 * event in, its tallies out, with no state of any message kept (every figure follows from the
 * event alone). Counts only: the events' sealed bodies and contacts are never read.
 *
 * Figures counted in time buckets (each at the time the event gives):
 * - `accepted`: messages accepted by a send (`MessagesAccepted`, one per message);
 * - `delivered`: messages delivered (`MessageDelivered`);
 * - `failed`: messages whose delivery failed, each once, at its first failed attempt
 *   (`DeliveryAttemptFailed` of attempt 1: every later attempt follows a failed first one);
 * - `failedAttempts`: every failed attempt (`DeliveryAttemptFailed`), retries included;
 * - `abandoned`: messages given up (`MessageAbandoned`);
 * - `received`: inbound messages (`InboundMessageReceived`).
 *
 * Gauges (what is the case now, not per bucket):
 * - `waiting`: accepted and not yet delivered or abandoned;
 * - `retrying`: of those, the messages whose latest attempt failed (they will be tried again, or
 *   wait for their bot's identity before they are). A message enters it at its first failed
 *   attempt and leaves it when delivered at an attempt after the first, or abandoned after at
 *   least one attempt. The final failed attempt and the abandonment it causes are one append, so
 *   a message that fails for good leaves it at once. `DeliveryDeferred` changes nothing: no
 *   attempt is spent.
 */

export const FIGURES = ['accepted', 'delivered', 'failed', 'failedAttempts', 'abandoned', 'received'] as const;
export type Figure = (typeof FIGURES)[number];
export type Counts = Record<Figure, number>;

export const GAUGES = ['waiting', 'retrying'] as const;
export type Gauge = (typeof GAUGES)[number];
export type Gauges = Record<Gauge, number>;

export const zeroCounts = (): Counts => ({ accepted: 0, delivered: 0, failed: 0, failedAttempts: 0, abandoned: 0, received: 0 });

/** What one event adds to the statistics of one app-messenger. */
export interface Tally {
  readonly appId: string;
  readonly messenger: string;
  /** When it happened (the event's own time), epoch ms. */
  readonly atMs: number;
  /** Added to the bucket of `atMs` (figures absent add nothing). */
  readonly counts: Partial<Counts>;
  /** Added to the gauges (negative: taken away). */
  readonly waiting: number;
  readonly retrying: number;
}

/** An event as the statistics read it: its type, data and commit time. */
export interface StatisticsInput {
  readonly type: string;
  readonly data: unknown;
  readonly recordedAt: Date;
}

/** The figures this module reads, by event type. */
export const COUNTED_EVENT_TYPES = ['MessagesAccepted', 'MessageDelivered', 'DeliveryAttemptFailed', 'MessageAbandoned', 'InboundMessageReceived'] as const;

const text = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/** The event's own time, else its commit time. */
const timeOf = (iso: unknown, recordedAt: Date): number => {
  const at = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(at) ? recordedAt.getTime() : at;
};

type Data<E extends { type: string; data: unknown }, T extends E['type']> = Partial<Extract<E, { type: T }>['data']>;

/** One tally for a message event of one app-messenger; none when the event names neither. */
const one = (data: { appId?: unknown; messenger?: unknown }, atMs: number, rest: Omit<Tally, 'appId' | 'messenger' | 'atMs'>): Tally[] =>
  text(data.appId) && text(data.messenger) ? [{ appId: data.appId, messenger: data.messenger, atMs, ...rest }] : [];

/** The tallies of one event (none for the types the statistics do not count, or a malformed event). */
export const talliesOf = (event: StatisticsInput): Tally[] => {
  if (typeof event.data !== 'object' || event.data === null) return [];
  switch (event.type) {
    case 'MessagesAccepted': {
      const data = event.data as Data<SendBatchEvent, 'MessagesAccepted'>;
      if (!Array.isArray(data.messages)) return [];
      const atMs = timeOf(data.acceptedAt, event.recordedAt);
      // One tally per app-messenger of the batch.
      const byKey = new Map<string, { appId: string; messenger: string; n: number }>();
      for (const message of data.messages) {
        if (!text(message?.appId) || !text(message.messenger)) continue;
        const key = `${message.appId}\u0000${message.messenger}`;
        const entry = byKey.get(key) ?? { appId: message.appId, messenger: message.messenger, n: 0 };
        entry.n += 1;
        byKey.set(key, entry);
      }
      return [...byKey.values()].map(({ appId, messenger, n }) => ({ appId, messenger, atMs, counts: { accepted: n }, waiting: n, retrying: 0 }));
    }
    case 'MessageDelivered': {
      const data = event.data as Data<DeliveryEvent, 'MessageDelivered'>;
      return one(data, timeOf(data.deliveredAt, event.recordedAt), { counts: { delivered: 1 }, waiting: -1, retrying: count(data.attempt) > 1 ? -1 : 0 });
    }
    case 'DeliveryAttemptFailed': {
      const data = event.data as Data<DeliveryEvent, 'DeliveryAttemptFailed'>;
      const first = count(data.attempt) === 1;
      return one(data, timeOf(data.failedAt, event.recordedAt), {
        counts: first ? { failed: 1, failedAttempts: 1 } : { failedAttempts: 1 },
        waiting: 0,
        retrying: first ? 1 : 0,
      });
    }
    case 'MessageAbandoned': {
      const data = event.data as Data<DeliveryEvent, 'MessageAbandoned'>;
      return one(data, timeOf(data.abandonedAt, event.recordedAt), { counts: { abandoned: 1 }, waiting: -1, retrying: count(data.attempts) >= 1 ? -1 : 0 });
    }
    case 'InboundMessageReceived': {
      const data = event.data as Data<InboundEvent, 'InboundMessageReceived'>;
      return one(data, timeOf(data.receivedAt, event.recordedAt), { counts: { received: 1 }, waiting: 0, retrying: 0 });
    }
    default:
      return [];
  }
};
