/**
 * Test fixtures: a coordinator on a fresh database (PGlite in memory, or a private schema on the
 * PostgreSQL server at TEST_DATABASE_URL / postgres://postgres@127.0.0.1:5432/test), listening on
 * a real socket, with an initialised Admin, a session and an API key.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import pg from 'pg';
import { type Coordinator, type CoordinatorOptions, createCoordinator } from '../src/coordinator.js';
import { type Db, openPglite, openPostgres } from '../src/db/db.js';
import { readMailbox } from '../src/mailer.js';

const { Client } = pg;

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Whether the PostgreSQL test server answers. */
export async function postgresReachable(): Promise<boolean> {
  const c = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

/** A database for one test run; `drop()` removes a PostgreSQL schema (PGlite: nothing to do). */
export async function openTestDb(kind: 'pglite' | 'postgres'): Promise<{ db: Db; drop: () => Promise<void> }> {
  if (kind === 'pglite') return { db: await openPglite(), drop: async () => {} };
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const db = await openPostgres(PG_URL, { schema, max: 20 });
  return {
    db,
    drop: async () => {
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

/** A test master key: public keys of fresh random secrets (the secrets are discarded at once). */
export function testMasterKey() {
  return {
    ceremonyId: null,
    threshold: 2,
    parties: [],
    secp256k1: {
      publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
      chainCode: randomBytes(32),
    },
    ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: randomBytes(32) },
    // FROST/Taproot master key: 33-byte compressed of either Y parity, as the signers hold and report it
    taproot: {
      publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
      chainCode: randomBytes(32),
    },
  };
}

/** A parsed JSON response body; tests check its shape with assertions. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are untyped JSON, checked by the assertions
export type Json = any;

export interface Harness {
  c: Coordinator;
  url: string;
  dir: string;
  profileId: string;
  apiKey: string;
  adminToken: string;
  /** Add to `ms` to move the coordinator's clock forward. */
  clockOffset: { ms: number };
  /** JSON request helper; returns status, headers, parsed body. */
  req(
    method: string,
    path: string,
    opts?: {
      body?: unknown;
      raw?: string;
      headers?: Record<string, string>;
      key?: string | null;
      token?: string | null;
    },
  ): Promise<{ status: number; headers: Headers; body: Json }>;
  /** Log in (password + email code read from the mailbox folder); returns the session token. */
  login(email: string, password: string): Promise<string>;
  /**
   * Step-up re-authentication of a session of a user without TOTP (`POST /admin/v1/session/step-up`
   * with the password), needed before sensitive admin actions; returns the token. `adminToken` is
   * stepped up already.
   */
  stepUp(token: string, password: string): Promise<string>;
  close(): Promise<void>;
}

export const ADMIN_EMAIL = 'admin@example.com';

/** The one-time bootstrap token a started, uninitialised coordinator wrote to its token file. */
export async function readBootstrapToken(c: { bootstrapTokenFile: string | undefined }): Promise<string> {
  if (c.bootstrapTokenFile === undefined) throw new Error('the coordinator has no bootstrap token file');
  return (await readFile(c.bootstrapTokenFile, 'utf8')).trim();
}
export const ADMIN_PASSWORD = 'correct horse battery staple';

/** Start a coordinator on a real socket with an Admin, a profile, an API key and (optionally) a master key. */
export async function startHarness(
  opts: { db?: 'pglite' | 'postgres'; masterKey?: boolean; coordinator?: Partial<CoordinatorOptions> } = {},
): Promise<Harness> {
  const clockOffset = { ms: 0 };
  const dir = await mkdtemp(join(tmpdir(), 'custodian-coord-'));
  const { db, drop } = await openTestDb(opts.db ?? 'pglite');
  const c = await createCoordinator({
    db,
    mode: 'development',
    mailboxDir: join(dir, 'mailbox'),
    bootstrapTokenFile: join(dir, 'bootstrap-token'),
    listen: { port: 0 },
    rateLimit: { max: 250 },
    logger: false,
    clock: () => new Date(Date.now() + clockOffset.ms),
    // Generous login limits so suites may log users in often; attack-rate-limit-bypass tests the real ones.
    // Step-up window and idle timeout as long as a session, so suites that move the clock keep their
    // stepped-up admin session; attack-step-up and attack-session-idle test the real ones.
    admin: {
      stepUpTtlMs: 8 * 3600_000,
      sessionIdleMs: 8 * 3600_000,
      scrypt: { N: 1 << 10, r: 8, p: 1 },
      loginRateLimit: { max: 10_000, windowMs: 60_000 },
      accountLockout: { maxFailures: 1000, windowMs: 60_000 },
      maxOpenChallenges: 100,
      emailCodes: { max: 1000, windowMs: 60_000 },
    },
    ...opts.coordinator,
  });
  const url = await c.start();
  const req: Harness['req'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key !== undefined && o.key !== null) headers['x-api-key'] = o.key;
    if (o.token !== undefined && o.token !== null) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed };
  };
  const login = async (email: string, password: string) => {
    const l = await req('POST', '/admin/v1/login', { body: { email, password } });
    if (l.status !== 200) throw new Error(`login failed: ${JSON.stringify(l.body)}`);
    const mails = (await readMailbox(join(dir, 'mailbox'))).filter((m) => m.to.includes(email));
    const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
    if (code === undefined) throw new Error('no login code in the mailbox');
    const v = await req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } });
    if (v.status !== 200) throw new Error(`verify failed: ${JSON.stringify(v.body)}`);
    return v.body.token as string;
  };
  const stepUp = async (token: string, password: string) => {
    const r = await req('POST', '/admin/v1/session/step-up', { token, body: { password } });
    if (r.status !== 200) throw new Error(`step-up failed: ${r.body?.code}`);
    return token;
  };
  const init = await req('POST', '/admin/v1/init', {
    body: {
      email: ADMIN_EMAIL,
      name: 'First Admin',
      password: ADMIN_PASSWORD,
      profile_name: 'main',
      bootstrap_token: await readBootstrapToken(c),
    },
  });
  if (init.status !== 201) throw new Error(`init failed: ${JSON.stringify(init.body)}`);
  const profileId = init.body.profile.profile_id as string;
  const adminToken = await stepUp(await login(ADMIN_EMAIL, ADMIN_PASSWORD), ADMIN_PASSWORD);
  const k = await req('POST', '/admin/v1/api-keys', {
    token: adminToken,
    body: { profile_id: profileId, name: 'test' },
  });
  if (k.status !== 201) throw new Error(`api key failed: ${JSON.stringify(k.body)}`);
  if (opts.masterKey !== false) await c.signers.masterKeys.insertMasterKey(testMasterKey());
  return {
    c,
    url,
    dir,
    profileId,
    apiKey: k.body.api_key,
    adminToken,
    clockOffset,
    req,
    login,
    stepUp,
    async close() {
      await c.stop();
      await drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
