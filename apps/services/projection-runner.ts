/** The read models' runner as the rest of Relay sees it (apps/read-models/runner.ts makes it). */
export interface ProjectionRunner {
  /** Global position of the last event applied. */
  readonly position: bigint;
  readonly healthy: boolean;
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}
