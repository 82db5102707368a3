import { defineConfig } from 'vitest/config';
import { startupDeadlineMs } from './test/support/startup-deadline.ts';

// Test kinds are told apart by file name: *.unit.spec.ts, *.contract.spec.ts, *.e2e.spec.ts.

/** A hook that starts a Relay may wait for it up to the start-up ceiling (RELAY_TEST_STARTUP_MS), and then does its own work. */
const STARTING_HOOK_MS = startupDeadlineMs() + 30_000;

/** The suites that need the private Monero chain: a project of their own. */
const MONERO_SUITES = ['infra/payment/monero/monero-payments.contract.spec.ts', 'test/e2e/billing-monero.e2e.spec.ts'];
/** The suites that need the private Litecoin chain (scripts/litecoin-local.sh): a project of their own. */
const LITECOIN_SUITES = ['infra/payment/bitcoin/litecoin-payments.contract.spec.ts', 'test/e2e/billing-litecoin.e2e.spec.ts'];
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['**/*.unit.spec.ts'], exclude: ['node_modules/**'] } },
      {
        test: {
          // Contract suites of the ports, and integration tests of modules on the real stores.
          name: 'contract',
          include: ['**/*.contract.spec.ts', '**/*.integration.spec.ts'],
          exclude: ['node_modules/**', ...MONERO_SUITES, ...LITECOIN_SUITES],
          testTimeout: 30_000,
          hookTimeout: 30_000,
          globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/kafka-global-setup.ts'],
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['**/*.e2e.spec.ts'],
          exclude: ['node_modules/**', 'test/e2e/kafka/**', ...MONERO_SUITES, ...LITECOIN_SUITES],
          // events-copy moves a Relay onto PostgreSQL.
          globalSetup: ['test/support/postgres-global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: STARTING_HOOK_MS,
        },
      },
      {
        // The suites on the private Monero chain (scripts/monero-local.sh, started once for the run):
        // one file at a time, since each mines and takes blocks back on the same chain.
        test: {
          name: 'monero',
          include: MONERO_SUITES,
          fileParallelism: false,
          globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/monero-global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      {
        // The Bitcoin-RPC adapter's contract on a private Litecoin regtest chain (started once for the run).
        test: {
          name: 'litecoin',
          include: LITECOIN_SUITES,
          fileParallelism: false,
          globalSetup: ['test/support/litecoin-global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 600_000,
        },
      },
      {
        // The public API's end-to-end suites and the read-model rebuild again, with PostgreSQL as the event store.
        test: {
          name: 'e2e-postgres',
          include: [
            'test/e2e/public-api.e2e.spec.ts',
            'test/e2e/delivery.e2e.spec.ts',
            'test/e2e/crash.e2e.spec.ts',
            'test/e2e/projections-rebuild.e2e.spec.ts',
            'test/e2e/bounded-input.e2e.spec.ts',
            'test/e2e/privacy.e2e.spec.ts',
            'test/e2e/event-stream.e2e.spec.ts',
          ],
          env: { RELAY_E2E_EVENT_STORE: 'postgres' },
          globalSetup: ['test/support/postgres-global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: STARTING_HOOK_MS,
        },
      },
      ...(process.env.RELAY_FAULTS === '1'
        ? [
            {
              // The fault suite (issue 48, test/faults/): instances frozen, cut off, a store restarted, a
              // disk full, Kafka restarted, each under traffic both ways, with a history checker. Too slow
              // for `npm test`: `npm run faults` (which sets RELAY_FAULTS=1) runs it, one file at a time.
              test: {
                name: 'faults',
                include: ['test/faults/*.fault.spec.ts', 'test/e2e/kafka/broker-outage.e2e.spec.ts'],
                env: { RELAY_E2E_BROKER: 'kafka' },
                fileParallelism: false,
                globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/kafka-global-setup.ts'],
                testTimeout: 600_000,
                hookTimeout: 600_000,
              },
            },
          ]
        : []),
      {
        // The public API's end-to-end suites again, on a real Kafka (started once for the run).
        test: {
          name: 'e2e-kafka',
          include: ['test/e2e/public-api.e2e.spec.ts', 'test/e2e/delivery.e2e.spec.ts', 'test/e2e/privacy.e2e.spec.ts', 'test/e2e/webhooks.e2e.spec.ts', 'test/e2e/kafka/*.e2e.spec.ts'],
          env: { RELAY_E2E_BROKER: 'kafka' },
          globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/kafka-global-setup.ts'],
          testTimeout: 90_000,
          hookTimeout: STARTING_HOOK_MS,
        },
      },
    ],
  },
});
