/**
 * Delays between reconnection attempts: `minMs`, doubling on each failure in a row up to `maxMs`,
 * back to `minMs` once a connection worked.
 */
export class Backoff {
  private next: number;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {
    this.next = minMs;
  }

  /** The delay before the next attempt (and doubles the one after). */
  delay(): number {
    const delay = this.next;
    this.next = Math.min(this.next * 2, this.maxMs);
    return delay;
  }

  reset(): void {
    this.next = this.minMs;
  }
}
