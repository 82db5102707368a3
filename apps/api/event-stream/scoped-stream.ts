import type { RecordedEvent } from '../../../infra/event-store/port.ts';
import type { HubStream } from './event-hub.ts';
import type { SseResponse } from './sse-response.ts';

/**
 * One client's event stream: it first writes the history it asked for, read from the store in
 * pages, while the hub collects the events committed meanwhile in a bounded buffer; then it
 * writes the buffer and goes on with what the hub hands it. Every frame passes `frameOf` (the
 * client's scope: its apps only, no secrets) and is written once, in position order.
 */
export class ScopedStream implements HubStream {
  private live = false;
  private buffer: Array<{ position: bigint; frame: string }> = [];
  private bufferedBytes = 0;
  private overflowed = false;
  /** The last position written or skipped. */
  private cursor: bigint;

  constructor(
    readonly credentialId: string,
    readonly appIds: ReadonlySet<string>,
    readonly tags: ReadonlySet<string>,
    private readonly sse: SseResponse,
    private readonly frameOf: (event: RecordedEvent) => string | undefined,
    /** Whether the credential and its apps are still live (the read models may see a deletion before the hub). */
    private readonly stillAllowed: () => boolean,
    private readonly maxBufferedBytes: number,
    after: bigint,
  ) {
    this.cursor = after;
  }

  get position(): bigint {
    return this.cursor;
  }

  /** Whether events were dropped from the buffer while catching up (the caller catches up again). */
  get lostBuffer(): boolean {
    return this.overflowed;
  }

  receive(event: RecordedEvent): void {
    if (this.sse.closed || event.globalPosition <= this.cursor) return;
    const frame = this.frameOf(event);
    if (!this.live) {
      if (this.overflowed || frame === undefined) return;
      this.bufferedBytes += frame.length;
      if (this.bufferedBytes > this.maxBufferedBytes) {
        this.overflowed = true;
        this.buffer = [];
        this.bufferedBytes = 0;
        return;
      }
      this.buffer.push({ position: event.globalPosition, frame });
      return;
    }
    this.write(event.globalPosition, frame);
  }

  /** Writes an event read from the store while catching up. */
  writeHistory(event: RecordedEvent): void {
    if (event.globalPosition <= this.cursor) return;
    this.write(event.globalPosition, this.frameOf(event));
  }

  /** Starts catching up again from the cursor (after the buffer overflowed). */
  resetBuffer(): void {
    this.buffer = [];
    this.bufferedBytes = 0;
    this.overflowed = false;
  }

  /** Writes what the hub handed over while catching up, then every event as it comes. */
  goLive(): void {
    const buffered = this.buffer;
    this.buffer = [];
    this.bufferedBytes = 0;
    this.live = true;
    for (const { position, frame } of buffered) if (position > this.cursor) this.write(position, frame);
  }

  revoke(why: string): void {
    this.sse.end(why);
  }

  private write(position: bigint, frame: string | undefined): void {
    if (this.sse.closed) return;
    if (!this.stillAllowed()) {
      this.sse.end('the key or one of its apps is gone');
      return;
    }
    this.cursor = position;
    if (frame !== undefined && !this.sse.send(frame)) this.sse.end('the reader fell too far behind: reconnect with Last-Event-ID');
  }
}
