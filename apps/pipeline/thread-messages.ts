import type { MetricsSnapshot } from '../services/metrics.ts';
import type { StatisticsQuery } from '../read-models/statistics-model.ts';

/** What the API thread says to the pipeline thread. */
export type ToPipeline =
  /** Open the stores and start: the thread loads its code first, then waits for this (see pipeline-thread.ts). */
  | { type: 'start' }
  | { type: 'metrics'; id: number }
  | { type: 'stop' }
  /** A statistics page's question to the model in the pipeline thread. */
  | { type: 'statistics'; id: number; query: StatisticsQuery }
  /** Tell (or stop telling) the API thread of this user's statistics changes: a live page is open. */
  | { type: 'statistics-watch' | 'statistics-unwatch'; userId: string };

/** What the pipeline thread says to the API thread. */
export type FromPipeline =
  | { type: 'ready' }
  /** It could not start; `name` is the error's (a ConfigError stops start-up with its line). */
  | { type: 'failed'; name: string; message: string }
  | { type: 'metrics'; id: number; snapshot: MetricsSnapshot }
  /** The answer to a statistics question (`view` undefined: not the user's app); `error` when the model could not answer. */
  | { type: 'statistics'; id: number; view?: unknown; error?: string }
  | { type: 'statistics-changed'; userId: string; appIds: string[] };
