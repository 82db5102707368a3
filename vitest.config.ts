import { defineConfig } from 'vitest/config';

// Test kinds are told apart by file name: *.unit.spec.ts, *.contract.spec.ts, *.e2e.spec.ts.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['**/*.unit.spec.ts'], exclude: ['node_modules/**'] } },
      { test: { name: 'contract', include: ['**/*.contract.spec.ts'], exclude: ['node_modules/**'], testTimeout: 30_000 } },
      {
        test: {
          name: 'e2e',
          include: ['**/*.e2e.spec.ts'],
          exclude: ['node_modules/**'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
