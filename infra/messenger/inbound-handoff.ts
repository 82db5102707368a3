/**
 * Hands what contacts wrote to the gateway, one message at a time in the order received, and
 * retries the first with back-off while the gateway cannot record it (the store is down), keeping
 * the later ones behind it. A daemon that already acknowledged a message to its network cannot be
 * asked for it again, so a connector must not drop one it was handed: at most `maxWaiting` wait,
 * and each one beyond is reported lost.
 */
import { Backoff } from '../net/backoff.ts';
import type { InboundFromContact } from './port.ts';

export interface HandoffLog {
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export class InboundHandoff {
  private readonly waiting: InboundFromContact[] = [];
  private draining = false;
  private closed = false;
  private onInbound: ((message: InboundFromContact) => Promise<void>) | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: HandoffLog,
    private readonly retry: { readonly minMs: number; readonly maxMs: number } = { minMs: 100, maxMs: 5_000 },
    private readonly maxWaiting = 10_000,
  ) {}

  /** Where messages go from now on; those already waiting go first. */
  start(onInbound: (message: InboundFromContact) => Promise<void>): void {
    this.onInbound = onInbound;
    void this.drain();
  }

  push(message: InboundFromContact): void {
    if (this.waiting.length >= this.maxWaiting) {
      this.log.error({ messenger: message.messenger, waiting: this.waiting.length }, 'an inbound message was lost: the gateway has not taken the earlier ones');
      return;
    }
    this.waiting.push(message);
    void this.drain();
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  private async drain(): Promise<void> {
    if (this.draining || !this.onInbound) return;
    this.draining = true;
    const backoff = new Backoff(this.retry.minMs, this.retry.maxMs);
    try {
      while (this.waiting.length > 0 && !this.closed) {
        try {
          await this.onInbound(this.waiting[0]!);
          this.waiting.shift();
          backoff.reset();
        } catch (error) {
          const delay = backoff.delay();
          this.log.warn({ err: { name: (error as Error).name, message: (error as Error).message }, retryInMs: delay }, 'the gateway could not record an inbound message; retrying');
          await new Promise<void>((resolve) => (this.retryTimer = setTimeout(resolve, delay)));
        }
      }
    } finally {
      this.draining = false;
    }
  }
}
