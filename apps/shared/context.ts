import type { Logger } from 'pino';
import type { DeliveryPolicy } from '../../domain/outbound/delivery.ts';
import type { Broker } from '../../infra/broker/port.ts';
import type { SecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { ReadModels } from '../../projections/read-models.ts';
import type { Config } from './config.ts';
import type { RelayMetrics } from './metrics.ts';
import type { ProjectionRunner } from './projection-runner.ts';

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
  readonly deliveryPolicy: DeliveryPolicy;
  readonly metrics: RelayMetrics;
}
