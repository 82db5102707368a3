/**
 * Which parts of a process are still starting. HTTP listens as soon as the API can answer, and
 * health answers 503 until every part it waits for runs (role `all`: the delivery pipeline
 * thread, whose consumer groups can take seconds to join on Kafka after a crash).
 */
export class Readiness {
  private readonly starting = new Set<string>();

  /** `part` is starting: health is 503 until `started(part)`. */
  waitFor(part: string): void {
    this.starting.add(part);
  }

  started(part: string): void {
    this.starting.delete(part);
  }

  get ready(): boolean {
    return this.starting.size === 0;
  }

  /** What is still starting, for the log. */
  get pending(): string[] {
    return [...this.starting];
  }
}
