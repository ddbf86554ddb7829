/**
 * The typed admin API client against a real coordinator (PGlite): each problem+json refusal
 * becomes one AdminCliError with the HTTP status and the problem's code and detail, and the CLI
 * prints it (`error: …`, or the problem with `--json`) with exit code 1; no session, an
 * unreachable coordinator and a silent one are CLI errors too. And every route the client calls
 * is a route of docs/api/openapi.json with that method.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { AdminCliError, AdminClient, type CliIo, registerAdminCommands } from '../src/admin/index.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** The rejection of `p`, which must be an AdminCliError. */
async function refusal(p: Promise<unknown>): Promise<AdminCliError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(AdminCliError);
  return e as AdminCliError;
}

describe('admin API client: problem+json → AdminCliError', () => {
  it('401: an unknown session token', async () => {
    const e = await refusal(new AdminClient({ baseUrl: h.url, token: 'css_not-a-session' }).me());
    expect(e.status).toBe(401);
    expect(e.code).toBe('SESSION_REQUIRED');
    expect(e.problem).toMatchObject({ status: 401, code: 'SESSION_REQUIRED' });
    expect(e.message).toBe(`401 SESSION_REQUIRED: ${e.detail ?? (e.problem as { title: string }).title}`);
  });

  it('404: the detail names what is missing', async () => {
    const api = new AdminClient({ baseUrl: `${h.url}///`, token: h.adminToken });
    const e = await refusal(api.getUser(randomUUID()));
    expect(e.status).toBe(404);
    expect(e.code).toBe('RESOURCE_NOT_FOUND');
    expect(e.detail).toMatch(/user/);
    expect(e.message).toBe(`404 RESOURCE_NOT_FOUND: ${e.detail}`);
  });

  it('422: the invalid fields are listed, the refused password is not echoed', async () => {
    const api = new AdminClient({ baseUrl: h.url, token: h.adminToken });
    const e = await refusal(
      api.createUser({ email: 'weak@example.com', name: 'Weak', role: 'VIEWER', password: 'password1234' }),
    );
    expect(e.status).toBe(422);
    expect(e.code).toBe('VALIDATION_FAILED');
    const errors = (e.problem as { errors: { field: string; message: string }[] }).errors;
    expect(errors.map((x) => x.field)).toEqual(['body.password']);
    expect(e.message).toBe(`422 VALIDATION_FAILED: ${e.detail} (body.password: ${errors[0]!.message})`);
    expect(e.message).not.toContain('password1234');
  });

  it('403 STEP_UP_REQUIRED carries the step-up hint', async () => {
    const fresh = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD); // a new session, not stepped up
    const api = new AdminClient({ baseUrl: h.url, token: fresh });
    const e = await refusal(api.createApiKey({ profile_id: h.profileId, name: 'no step-up' }));
    expect(e.status).toBe(403);
    expect(e.code).toBe('STEP_UP_REQUIRED');
    expect(e.message).toBe(`403 STEP_UP_REQUIRED: ${e.detail} — run \`custodian admin step-up\`, then retry`);
    await api.stepUp({ password: ADMIN_PASSWORD });
    expect((await api.createApiKey({ profile_id: h.profileId, name: 'after step-up' })).api_key).toMatch(/^cst_/);
  });

  it('the CLI prints the error and exits with 1; with --json it prints the problem', async () => {
    const run = async (...args: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const io: CliIo = { out: (s) => out.push(s), err: (s) => err.push(s), env: { HOME: h.dir } };
      const program = new Command('custodian').exitOverride();
      registerAdminCommands(program, io);
      process.exitCode = 0;
      await program.parseAsync(['node', 'custodian', 'admin', '--coordinator-url', h.url, ...args]);
      const code = Number(process.exitCode ?? 0);
      process.exitCode = 0;
      return { out: out.join('\n'), err: err.join('\n'), code };
    };
    const id = randomUUID();
    const text = await run('--token', h.adminToken, 'users', 'show', id);
    expect(text).toMatchObject({ out: '', code: 1 });
    expect(text.err).toMatch(/^error: 404 RESOURCE_NOT_FOUND: .*user/);
    const json = await run('--token', h.adminToken, '--json', 'users', 'show', id);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.err)).toMatchObject({
      status: 404,
      code: 'RESOURCE_NOT_FOUND',
      instance: `/admin/v1/users/${id}`,
    });
    const none = await run('--session-file', `${h.dir}/no-such-session.json`, 'whoami');
    expect(none).toMatchObject({ code: 1, err: 'error: not logged in: run `custodian admin login` or pass --token' });
  });
});

describe('admin API client: no answer', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // accepts connections and never answers
    silent = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it('no session token: refused before any request', async () => {
    const e = await refusal(new AdminClient({ baseUrl: 'http://127.0.0.1:9' }).me());
    expect(e.status).toBeUndefined();
    expect(e.message).toBe('not logged in: run `custodian admin login` or pass --token');
  });

  it('an unreachable coordinator', async () => {
    const e = await refusal(new AdminClient({ baseUrl: 'http://127.0.0.1:9', token: 'css_x' }).me());
    expect(e.status).toBeUndefined();
    expect(e.message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:9: /);
  });

  it('a coordinator that does not answer within the timeout', async () => {
    const { port } = silent.address() as { port: number };
    const api = new AdminClient({ baseUrl: `http://127.0.0.1:${port}`, token: 'css_x', timeoutMs: 200 });
    const e = await refusal(api.listUsers());
    expect(e.status).toBeUndefined();
    expect(e.message).toBe(`cannot reach http://127.0.0.1:${port}: no answer within 200 ms (GET /admin/v1/users)`);
  });
});

describe('admin API client: routes', () => {
  it('every route the client calls is in docs/api/openapi.json with that method', async () => {
    const source = await readFile(new URL('../src/admin/client.ts', import.meta.url), 'utf8');
    const doc = JSON.parse(await readFile(new URL('../../../docs/api/openapi.json', import.meta.url), 'utf8')) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = [...source.matchAll(/request\(\s*'(GET|POST|PUT|PATCH|DELETE)',\s*'([^']+)'/g)].map(
      ([, method, path]) => `${method} ${path}`,
    );
    expect(routes.length).toBeGreaterThanOrEqual(80);
    const missing = routes.filter((r) => {
      const [method, path] = r.split(' ') as [string, string];
      return doc.paths[path]?.[method.toLowerCase()] === undefined;
    });
    expect(missing).toEqual([]);
  });
});
