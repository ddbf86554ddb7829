/**
 * The committed contract is current and clean: docs/api/openapi.json equals the document a
 * coordinator generates now (scripts/generate-openapi.mjs, production defaults), `redocly lint`
 * (redocly.yaml: recommended ruleset, operationIds and security required) reports zero errors, and
 * the SDK's generated types (packages/sdk/src/generated/api.ts) are those of the committed document.
 * Runs the script on the build (`tsc -b` first, as the README's test command does).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const DOC = 'docs/api/openapi.json';
const REGENERATE = 'run `npx tsc -b && node scripts/generate-openapi.mjs` and commit the result';

const script = async (what: 'doc' | 'types') =>
  (await run(process.execPath, ['scripts/generate-openapi.mjs', '--print', what], { cwd: root, maxBuffer: 64 << 20 }))
    .stdout;

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

describe('docs/api/openapi.json', () => {
  it('equals the document a coordinator generates', async () => {
    const generated = await script('doc');
    const committed = await readFile(`${root}${DOC}`, 'utf8');
    expect(generated.length).toBeGreaterThan(100_000);
    expect(committed === generated, `${DOC} is stale: ${REGENERATE}`).toBe(true);
  });

  it('passes `redocly lint` (recommended ruleset) with zero errors, and every operation has an operationId', async () => {
    const bin = `${root}node_modules/.bin/redocly`;
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    // redocly exits 1 when it finds errors; its JSON report is on stdout either way.
    const out = await run(bin, ['lint', DOC, '--format=json'], { cwd: root, env, maxBuffer: 64 << 20 }).catch(
      (e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }),
    );
    const report = JSON.parse(out.stdout) as { totals: { errors: number }; problems: LintProblem[] };
    const errors = report.problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    expect(errors).toEqual([]);
    expect(report.totals.errors).toBe(0);
    const doc = JSON.parse(await readFile(`${root}${DOC}`, 'utf8'));
    const ids = Object.values<Record<string, { operationId?: string }>>(doc.paths).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    expect(ids.length).toBeGreaterThan(90);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('declares Idempotency-Key required on the create operations', async () => {
    const doc = JSON.parse(await readFile(`${root}${DOC}`, 'utf8'));
    for (const [path, id] of [
      ['/api/v1/profiles/{profile_id}/wallets', 'createWallet'],
      ['/api/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses', 'createAddress'],
      ['/api/v1/profiles/{profile_id}/transfers', 'createTransfer'],
      ['/api/v1/profiles/{profile_id}/fee-estimate', 'estimateFee'],
    ] as const) {
      const op = doc.paths[path].post;
      expect(op.operationId).toBe(id);
      const header = op.parameters.find(
        (p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key',
      );
      expect(header?.required, path).toBe(true);
      expect(op.security).toEqual([{ ApiKey: [] }]);
    }
  });
});

describe('packages/sdk/src/generated/api.ts', () => {
  it('holds the types generated from the committed document', async () => {
    const generated = await script('types');
    const committed = await readFile(`${root}packages/sdk/src/generated/api.ts`, 'utf8');
    expect(generated).toContain('createTransfer: {');
    expect(committed === generated, `packages/sdk/src/generated/api.ts is stale: ${REGENERATE}`).toBe(true);
  });
});
