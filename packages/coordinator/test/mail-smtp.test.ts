/**
 * Login codes over real SMTP (#29 "Mail and bootstrap"): the coordinator sends through nodemailer
 * to a real SMTP server process on loopback (scripts/smtp-sink.mjs, smtp-server), and the test
 * logs in with the code read from the message it stored (mailparser). When the SMTP server is gone,
 * login answers 503 MAIL_UNAVAILABLE (problem+json), logs one line naming the transport failure —
 * never the code or the SMTP password — and leaves no open challenge behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { afterEach, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { openPglite } from '../src/db/db.js';

const SINK = fileURLToPath(new URL('../../../scripts/smtp-sink.mjs', import.meta.url));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

/** Kill the sink's whole process group (idempotent) and wait for its exit. */
async function killGroup(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  try {
    process.kill(-p.pid!, 'SIGKILL');
  } catch {}
  await exited;
}

/** Start scripts/smtp-sink.mjs storing into `dir`, in its own process group; resolves with its port. */
async function startSink(dir: string): Promise<{ port: number; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [SINK, '--dir', dir], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(() => killGroup(proc));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /smtp-sink listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`smtp-sink exited (${code}) before listening`)));
  });
  return { port, proc };
}

describe('login codes over SMTP', () => {
  it('a login code reaches a real SMTP server; without it, login is 503 MAIL_UNAVAILABLE and nothing leaks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'custodian-smtp-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const sinkDir = join(dir, 'sink');
    const sink = await startSink(sinkDir);
    const logs: string[] = [];
    const c = await createCoordinator({
      db: await openPglite(),
      mode: 'production',
      mail: {
        transport: 'smtp',
        url: `smtp://custodian:smtp-secret-pw@127.0.0.1:${sink.port}`,
        from: 'Custodian <custodian@example.com>',
      },
      bootstrapTokenFile: join(dir, 'bootstrap-token'),
      listen: { port: 0 },
      logger: {
        level: 'info',
        stream: new Writable({
          write(chunk, _e, cb) {
            logs.push(String(chunk));
            cb();
          },
        }),
      },
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
      webhooks: { keyEncryptionKey: new Uint8Array(32).fill(5), runWorker: false },
    });
    cleanups.push(() => c.stop());
    expect(c.mailboxDir).toBeUndefined();
    const url = await c.start();
    const post = async (path: string, body: unknown) => {
      const r = await fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return {
        status: r.status,
        type: r.headers.get('content-type'),
        body: (await r.json()) as Record<string, unknown> & { challenge_id?: string; method?: string; token?: string },
      };
    };
    const email = 'ops@example.com';
    const password = 'correct horse battery staple';
    const token = (await readFile(join(dir, 'bootstrap-token'), 'utf8')).trim();
    expect((await post('/admin/v1/init', { email, name: 'Ops', password, bootstrap_token: token })).status).toBe(201);

    const login = await post('/admin/v1/login', { email, password });
    expect(login.status).toBe(200);
    expect(login.body.method).toBe('email');
    const files = (await readdir(sinkDir)).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(1);
    const mail = await simpleParser(await readFile(join(sinkDir, files[0]!)));
    expect(mail.from?.value[0]).toMatchObject({ name: 'Custodian', address: 'custodian@example.com' });
    expect((Array.isArray(mail.to) ? mail.to[0] : mail.to)?.text).toBe(email);
    expect(mail.subject).toBe('Your Custodian login code');
    const code = /code is (\d{6})/.exec(mail.text ?? '')?.[1];
    expect(code).toBeDefined();
    const v = await post('/admin/v1/login/verify', { challenge_id: login.body.challenge_id, code });
    expect(v.status).toBe(200);
    expect(v.body.token).toMatch(/^css_/);

    // the SMTP server goes away: the next login code cannot be sent
    await killGroup(sink.proc);
    const before = await c.db.query('SELECT 1 FROM login_challenges');
    const down = await post('/admin/v1/login', { email, password });
    expect(down.status).toBe(503);
    expect(down.type).toMatch(/^application\/problem\+json/);
    expect(down.body).toMatchObject({ status: 503, code: 'MAIL_UNAVAILABLE' });
    expect(await c.db.query('SELECT 1 FROM login_challenges')).toHaveLength(before.length);
    const line = logs.find((l) => l.includes('login code not sent'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: 50, code: 'MAIL_UNAVAILABLE' });
    expect(JSON.parse(line!).transport).toMatch(/^ECONNECTION|^ESOCKET/);
    const all = logs.join('') + JSON.stringify(down.body);
    expect(all).not.toContain('smtp-secret-pw');
    expect(all).not.toContain(code!);
  });

  it('production mode refuses to start without a mail transport, naming what to set; the file mailbox only when chosen', async () => {
    // checked before anything is opened
    await expect(createCoordinator({ mode: 'production' })).rejects.toThrow(
      /production mode needs a mail transport.*`mail`.*--smtp-url \/ CUSTODIAN_SMTP_URL.*"transport": "file"/,
    );
    await expect(
      createCoordinator({ mode: 'production', mail: { transport: 'smtp', url: 'http://mail.example.com' } }),
    ).rejects.toThrow(/mail\.url: expected smtp:/);
    // the file mailbox in production: only when chosen explicitly
    const dir = await mkdtemp(join(tmpdir(), 'custodian-smtp-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const c = await createCoordinator({
      mode: 'production',
      mail: { transport: 'file' },
      db: await openPglite(),
      mailboxDir: join(dir, 'mailbox'),
      logger: false,
    });
    cleanups.push(() => c.stop());
    expect(c.mailboxDir).toBe(join(dir, 'mailbox'));
  });
});
