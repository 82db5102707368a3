import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

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
 * One Kafka per test run: `KAFKA_BROKERS` when set, otherwise the project's own single-node broker
 * from Apache Kafka's jars (scripts/kafka-local.sh), started here and stopped at the end if this
 * run started it. Where a Docker engine runs, `docker compose up -d kafka` and KAFKA_BROKERS=127.0.0.1:29092
 * use the compose file's Kafka instead.
 * With CI=true a broker that cannot be had fails the run; elsewhere the Kafka suites skip and say why.
 */
export default async function setup(project: TestProject) {
  if (process.env.KAFKA_BROKERS) {
    project.provide('kafkaBrokers', process.env.KAFKA_BROKERS);
    project.provide('kafkaSkipReason', '');
    return;
  }
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
