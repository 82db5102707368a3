import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { RecordedEvent } from '../../../infra/event-store/port.ts';
import type { EventHistory } from './event-history.ts';
import { EventHub, type HubStream } from './event-hub.ts';

/** A history whose follows the test drives: each hands its handler out and counts its stops. */
const fakeHistory = () => {
  const follows: Array<{ after: bigint; handler: (events: RecordedEvent[]) => void; stopped: boolean }> = [];
  const history: EventHistory = {
    head: async () => 7n,
    page: async () => [],
    follow: (after, handler) => {
      const follow = { after, handler, stopped: false };
      follows.push(follow);
      return { stop: async () => void (follow.stopped = true), position: () => after } as never;
    },
  };
  return { history, follows };
};

const event = (position: bigint): RecordedEvent => ({
  id: `e${position}`,
  type: 'MessagesAccepted',
  streamName: 'sendbatch-1',
  streamVersion: 1n,
  globalPosition: position,
  data: {},
  metadata: {},
  recordedAt: new Date(0),
});

const stream = (received: RecordedEvent[]): HubStream => ({
  credentialId: 'c',
  tags: new Set(['app:a']),
  appIds: new Set(['a']),
  receive: (e) => void received.push(e),
  revoke: () => undefined,
});

describe('event stream hub', () => {
  it('stops following the store a while after its last stream ended, and follows again for the next one', async () => {
    vi.useFakeTimers();
    try {
      const { history, follows } = fakeHistory();
      const hub = new EventHub(history, () => ['app:a'], pino({ level: 'silent' }), 1000);
      await hub.start();
      const received: RecordedEvent[] = [];
      const first = hub.attach(stream(received));
      first.detach();
      // A stream that comes within the idle time keeps the same subscription.
      vi.advanceTimersByTime(999);
      const second = hub.attach(stream(received));
      vi.advanceTimersByTime(5000);
      expect([hub.running, follows.length, follows[0]!.stopped]).toEqual([true, 1, false]);
      second.detach();
      vi.advanceTimersByTime(1000);
      expect([hub.running, follows[0]!.stopped]).toEqual([false, true]);
      expect(() => hub.attach(stream(received))).toThrow('The event hub is not running');

      await hub.start();
      expect(follows.length).toBe(2);
      const third = hub.attach(stream(received));
      // The stopped subscription's late batch is not handed on; the new one's is.
      follows[0]!.handler([event(8n)]);
      follows[1]!.handler([event(9n)]);
      expect(received.map((e) => e.globalPosition)).toEqual([9n]);
      third.detach();
      await hub.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
