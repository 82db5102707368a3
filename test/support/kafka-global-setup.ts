import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { dockerEngineAvailable } from './docker.ts';
import { freePort } from './relay-process.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Bootstrap brokers of the Kafka the suites use, or '' when none could be had (outside CI only). */
    kafkaBrokers: string;
    /** Why the Kafka suites skip, when they do. */
    kafkaSkipReason: string;
  }
}

const script = fileURLToPath(new URL('../../scripts/kafka-local.sh', import.meta.url));

/**
 * One Kafka per test run: `KAFKA_BROKERS` when set; where a Docker engine runs, Apache's own image
 * (the same 3.9.x) through testcontainers; otherwise the project's single-node broker from Apache
 * Kafka's jars (scripts/kafka-local.sh), started here and stopped at the end if this run started it.
 * With CI=true a broker that cannot be had fails the run; elsewhere the Kafka suites skip and say why.
 */
export default async function setup(project: TestProject) {
  if (process.env.KAFKA_BROKERS) {
    project.provide('kafkaBrokers', process.env.KAFKA_BROKERS);
    project.provide('kafkaSkipReason', '');
    return;
  }
  if (dockerEngineAvailable()) return startContainer(project);
  const wasRunning = isRunning();
  try {
    execFileSync(script, ['start'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 180_000 });
  } catch (error) {
    if (process.env.CI) throw new Error(`Kafka could not be started for the Kafka suites: ${String(error)}`);
    project.provide('kafkaBrokers', '');
    project.provide('kafkaSkipReason', `no Kafka: set KAFKA_BROKERS, or let scripts/kafka-local.sh start one (${String(error)})`);
    return;
  }
  process.env.KAFKA_BROKERS = '127.0.0.1:9092';
  project.provide('kafkaBrokers', '127.0.0.1:9092');
  project.provide('kafkaSkipReason', '');
  return () => {
    if (!wasRunning && !process.env.KAFKA_KEEP) execFileSync(script, ['stop'], { stdio: 'ignore' });
  };
}

const isRunning = () => {
  try {
    execFileSync(script, ['status'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** apache/kafka in KRaft mode, its client listener on a free host port it advertises as such. */
const startContainer = async (project: TestProject) => {
  const { GenericContainer, Wait } = await import('testcontainers');
  const port = await freePort();
  const container = await new GenericContainer('apache/kafka:3.9.2')
    .withExposedPorts({ container: 19092, host: port })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093,HOST://:19092',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://localhost:9092,HOST://127.0.0.1:${port}`,
      KAFKA_INTER_BROKER_LISTENER_NAME: 'PLAINTEXT',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  const brokers = `127.0.0.1:${port}`;
  process.env.KAFKA_BROKERS = brokers;
  project.provide('kafkaBrokers', brokers);
  project.provide('kafkaSkipReason', '');
  return async () => {
    await container.stop();
  };
};
