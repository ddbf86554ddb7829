import { defineConfig } from 'vitest/config';

// One root config with two projects (STYLE.md item 17):
//  - unit: every package's `test/**/*.test.ts` and the repository-wide `test/` (architecture
//    checks) — the suite the README's test command runs;
//  - slow: `test/**/*.slow.test.ts` — large party matrices and real prime generation.
// Workspace packages resolve to their TypeScript sources through the `@custodian/source`
// export condition, so tests never depend on a stale build.
const resolve = { conditions: ['@custodian/source', 'node', 'development|production'] };

export default defineConfig({
  test: {
    reporters: ['default', './scripts/vitest-summary-reporter.ts'],
    projects: [
      {
        resolve,
        ssr: { resolve: { conditions: resolve.conditions, externalConditions: ['@custodian/source'] } },
        test: {
          name: 'unit',
          include: [
            'packages/*/test/**/*.test.ts',
            'packages/*/test/**/*.test.tsx',
            'bench/test/**/*.test.ts',
            'test/**/*.test.ts',
          ],
          exclude: ['**/*.slow.test.ts', '**/node_modules/**'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          pool: 'forks',
          // fails the run when a process the tests started is still alive at the end (#29)
          globalSetup: ['./test/process-guard.ts'],
        },
      },
      {
        resolve,
        ssr: { resolve: { conditions: resolve.conditions, externalConditions: ['@custodian/source'] } },
        test: {
          name: 'slow',
          include: ['packages/*/test/**/*.slow.test.ts'],
          testTimeout: 1_800_000,
          hookTimeout: 600_000,
          pool: 'forks',
          globalSetup: ['./test/process-guard.ts'],
        },
      },
    ],
  },
});
