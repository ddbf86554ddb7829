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
          // two test files at once: most of this suite waits on sockets and child processes, so on
          // a 2-core machine two files in parallel take ~0.6 of the time of one after the other
          // (vitest's default here is cores − 1 = 1)
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
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
          // whole clusters of processes, CPU-bound: one file at a time
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          globalSetup: ['./test/process-guard.ts'],
        },
      },
    ],
  },
});
