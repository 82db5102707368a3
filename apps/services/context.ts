import type { Logger } from 'pino';
import type { DeliveryPolicy } from '../../domain/delivery/policy.ts';
import type { Broker } from '../../infra/broker/port.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { SealingWindows } from './sealing-windows.ts';
import type { KeyedHash } from '../../infra/crypto/keyed-hash.ts';
import type { SecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { ReadModels } from '../../projections/read-models.ts';
import type { Config } from './config.ts';
import type { Readiness } from './readiness.ts';
import type { RelayMetrics } from './metrics.ts';
import type { ProjectionRunner } from './projection-runner.ts';
import type { Limits } from './limiter.ts';

/** What the roles of a Relay process share: stores, read models, settings and metrics. */
export interface RelayContext {
  readonly config: Config;
  readonly version: string;
  readonly log: Logger;
  readonly store: EventStore;
  readonly broker: Broker;
  readonly models: ReadModels;
  readonly projections: ProjectionRunner;
  readonly secrets: SecretBox;
  /** Stable keyed references to values that are not written down (a contact that signs in, a code). */
  readonly keyedHash: KeyedHash;
  /** Seals message bodies and contact ids with data keys wrapped by the secret key. */
  readonly sealer: MessageSealer;
  /** The data key of each app's current period (sealing-windows.ts). */
  readonly sealing: SealingWindows;
  readonly deliveryPolicy: DeliveryPolicy;
  readonly metrics: RelayMetrics;
  readonly readiness: Readiness;
  /** Where the rate limits keep their windows: this process, or every instance on the same PostgreSQL. */
  readonly limits: Limits;
}
