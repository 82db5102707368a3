import type { MetricsSnapshot } from '../boot/metrics.ts';

/** What the API thread says to the pipeline thread. */
export type ToPipeline = { type: 'metrics'; id: number } | { type: 'stop' };

/** What the pipeline thread says to the API thread. */
export type FromPipeline =
  | { type: 'ready' }
  /** It could not start; `name` is the error's (a ConfigError stops start-up with its line). */
  | { type: 'failed'; name: string; message: string }
  | { type: 'metrics'; id: number; snapshot: MetricsSnapshot };
