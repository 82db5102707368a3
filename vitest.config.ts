import { defineConfig } from 'vitest/config';

// Test kinds are told apart by file name: *.unit.spec.ts, *.contract.spec.ts, *.e2e.spec.ts.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['**/*.unit.spec.ts'], exclude: ['node_modules/**'] } },
      {
        test: {
          // Contract suites of the ports, and integration tests of modules on the real stores.
          name: 'contract',
          include: ['**/*.contract.spec.ts', '**/*.integration.spec.ts'],
          exclude: ['node_modules/**'],
          testTimeout: 30_000,
          hookTimeout: 30_000,
          globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/kafka-global-setup.ts'],
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['**/*.e2e.spec.ts'],
          exclude: ['node_modules/**', 'test/e2e/kafka/**'],
          // events-copy moves a Relay onto PostgreSQL.
          globalSetup: ['test/support/postgres-global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
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
          hookTimeout: 60_000,
        },
      },
      {
        // The public API's end-to-end suites again, on a real Kafka (started once for the run).
        test: {
          name: 'e2e-kafka',
          include: ['test/e2e/public-api.e2e.spec.ts', 'test/e2e/delivery.e2e.spec.ts', 'test/e2e/privacy.e2e.spec.ts', 'test/e2e/kafka/*.e2e.spec.ts'],
          env: { RELAY_E2E_BROKER: 'kafka' },
          globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/kafka-global-setup.ts'],
          testTimeout: 90_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
