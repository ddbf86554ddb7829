/**
 * Attack (#29 "Mail and bootstrap"): `POST /admin/v1/init` was first-come-first-served — whoever
 * reached a fresh coordinator first became its Admin. Now init needs the one-time bootstrap token
 * the coordinator writes, at its first start, to `<dataDir>/bootstrap-token` (mode 0600, only its
 * hash in the database, never in the logs); a successful init consumes it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../src/coordinator.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const BODY = { email: 'first@example.com', name: 'First Admin', password: 'correct horse battery staple' };

/** A started coordinator with its data folder `dir` (PGlite in `dir/pgdata`); `logs` collects its log lines. */
async function coordinator(dir: string, loginMax = 1000): Promise<{ c: Coordinator; logs: string[]; url: string }> {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const c = await createCoordinator({
    dataDir: dir,
    mode: 'development',
    listen: { port: 0 },
    logger: { level: 'info', stream },
    admin: { scrypt: { N: 1 << 10, r: 8, p: 1 }, loginRateLimit: { max: loginMax, windowMs: 60_000 } },
    webhooks: { keyEncryptionKey: new Uint8Array(32).fill(3), runWorker: false },
  });
  cleanups.push(() => c.stop());
  const url = await c.start();
  return { c, logs, url };
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-bootstrap-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function init(url: string, body: Record<string, unknown>) {
  const r = await fetch(`${url}/admin/v1/init`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, type: r.headers.get('content-type'), body: (await r.json()) as Record<string, unknown> };
}

describe('attack: a second party initialises a fresh instance before its operator', () => {
  it('init without the bootstrap token, or with a wrong one, is refused; the token from the file works once', async () => {
    const dir = await tempDir();
    const { c, logs, url } = await coordinator(dir);
    const file = join(dir, 'bootstrap-token');
    expect(c.bootstrapTokenFile).toBe(file);
    const token = (await readFile(file, 'utf8')).trim();
    expect(token).toMatch(/^cbt_[A-Za-z0-9_-]{43}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    // the log names the file, never the token; the database holds only its hash
    expect(logs.join('')).toContain(file);
    expect(logs.join('')).not.toContain(token);
    const rows = await c.db.query<{ token_hash: string }>('SELECT token_hash FROM bootstrap_token');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).not.toContain(token);

    // the attacker: no token, a wrong token, a token of the right shape
    for (const extra of [
      {},
      { bootstrap_token: 'guess' },
      { bootstrap_token: `cbt_${randomBytes(32).toString('base64url')}` },
    ]) {
      const r = await init(url, { ...BODY, email: 'attacker@example.com', ...extra });
      expect(r.status).toBe(401);
      expect(r.type).toMatch(/^application\/problem\+json/);
      expect(r.body.code).toBe('BOOTSTRAP_TOKEN_INVALID');
      expect(JSON.stringify(r.body)).not.toContain(token);
    }
    expect(await c.users.initialised()).toBe(false);
    const refused = await c.db.query("SELECT 1 FROM audit_log WHERE action = 'instance.init_refused'");
    expect(refused).toHaveLength(3);

    // the operator, with the token from the file
    const ok = await init(url, { ...BODY, bootstrap_token: token });
    expect(ok.status).toBe(201);
    expect((ok.body.user as { role: string }).role).toBe('ADMIN');
    // consumed: file deleted, hash cleared, the token does not work again
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
    expect(await c.db.query('SELECT 1 FROM bootstrap_token')).toHaveLength(0);
    const again = await init(url, { ...BODY, email: 'x@example.com', bootstrap_token: token });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_INITIALISED');
    expect(logs.join('')).not.toContain(token);
  });

  it('a restart keeps a token whose file matches, replaces a lost one, and makes none once initialised', async () => {
    const dir = await tempDir();
    const file = join(dir, 'bootstrap-token');
    const first = await coordinator(dir);
    const t1 = (await readFile(file, 'utf8')).trim();
    await first.c.stop();
    const second = await coordinator(dir);
    expect((await readFile(file, 'utf8')).trim()).toBe(t1);
    await second.c.stop();
    await unlink(file);
    const third = await coordinator(dir);
    const t3 = (await readFile(file, 'utf8')).trim();
    expect(t3).not.toBe(t1);
    expect((await init(third.url, { ...BODY, bootstrap_token: t1 })).body.code).toBe('BOOTSTRAP_TOKEN_INVALID');
    expect((await init(third.url, { ...BODY, bootstrap_token: t3 })).status).toBe(201);
    await third.c.stop();
    await coordinator(dir);
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });

  it('guessing the token is rate limited like login', async () => {
    const dir = await tempDir();
    const { url } = await coordinator(dir, 3);
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) codes.push((await init(url, { ...BODY, bootstrap_token: `guess-${i}` })).status);
    expect(codes.slice(0, 3)).toEqual([401, 401, 401]);
    expect(codes.slice(3)).toEqual([429, 429]);
  });
});
