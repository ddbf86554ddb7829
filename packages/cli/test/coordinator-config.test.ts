/**
 * The coordinator's config file, mail settings and bootstrap token from the CLI's side (#29):
 * unknown keys at any depth are errors naming the key and its closest valid spelling; `mail` comes
 * from the file, `--smtp-url` / `CUSTODIAN_SMTP_URL` and `CUSTODIAN_MAIL_FROM`; the built
 * `custodian coordinator start --mode production` refuses to start without a mail transport; and
 * `custodian admin init` sends the bootstrap token from `--bootstrap-token-file`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCoordinator } from '@custodian/coordinator';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../../coordinator/src/db/db.js';
import { type CliIo, registerAdminCommands } from '../src/admin/index.js';
import { coordinatorOptionsFromFlags } from '../src/coordinator.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-config-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const flags = (config?: string, more: Record<string, unknown> = {}) => ({
  dataDir: '/tmp/unused',
  host: '127.0.0.1',
  port: '0',
  mode: 'production',
  chain: [],
  trustedAdminKey: [],
  signing: true,
  ...(config !== undefined ? { config } : {}),
  ...more,
});

/** Write `content` as a config file and build the options from it. */
async function fromFile(content: unknown, more: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}) {
  const file = join(await tempDir(), 'coordinator.json');
  await writeFile(file, JSON.stringify(content));
  return { file, options: () => coordinatorOptionsFromFlags(flags(file, more), env) };
}

describe('coordinator config file', () => {
  it('an unknown key, at any depth, names itself, where it is and its closest valid spelling', async () => {
    const cases: [unknown, RegExp][] = [
      [{ mail: { transport: 'smtp', smtpURL: 'smtp://h' } }, /unknown key `smtpURL` in mail — did you mean `url`\?$/],
      [
        { smtpUrl: 'smtp://h' },
        /unknown key `smtpUrl` at the top level \(valid keys: logLevel, dashboard, chains, transfers, signing, keys, replicas, mail, metrics, health, webhooks, prices\)$/,
      ],
      [
        { chains: { 'ethereum-local': { rpcurl: 'http://x' } } },
        /unknown key `rpcurl` in chains\.ethereum-local — did you mean `rpcUrl`\?$/,
      ],
      [
        { transfers: { pipeline: { leaseMS: 1 } } },
        /unknown key `leaseMS` in transfers\.pipeline — did you mean `leaseMs`\?$/,
      ],
      [
        { signing: { presignaturePol: 2 } },
        /unknown key `presignaturePol` in signing — did you mean `presignaturePool`\?$/,
      ],
      [{ mail: { transport: 'smtp' } }, /mail: must have required property 'url'$/],
      [{ mail: { transport: 'sendmail' } }, /mail\.transport: must be one of "smtp", "file"$/],
    ];
    for (const [content, message] of cases) {
      const { file, options } = await fromFile(content);
      const err = await options().then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message, JSON.stringify(content)).toMatch(message);
      expect(err?.message.startsWith(`${file}: `)).toBe(true);
      expect((err as { code?: string }).code).toBe('CONFIG_INVALID');
    }
  });

  it('mail: the file, then CUSTODIAN_SMTP_URL, then --smtp-url; CUSTODIAN_MAIL_FROM over mail.from', async () => {
    const smtp = { transport: 'smtp', url: 'smtp://u:p@file.example:587', from: 'File <f@example.com>' };
    expect((await (await fromFile({ mail: smtp })).options()).mail).toEqual(smtp);
    expect((await (await fromFile({ mail: { transport: 'file' } })).options()).mail).toEqual({ transport: 'file' });
    const env = { CUSTODIAN_SMTP_URL: 'smtp://env.example:25', CUSTODIAN_MAIL_FROM: 'Env <e@example.com>' };
    expect((await (await fromFile({ mail: smtp }, {}, env)).options()).mail).toEqual({
      transport: 'smtp',
      url: 'smtp://env.example:25',
      from: 'Env <e@example.com>',
    });
    expect((await (await fromFile({}, { smtpUrl: 'smtps://flag.example:465' }, env)).options()).mail).toEqual({
      transport: 'smtp',
      url: 'smtps://flag.example:465',
      from: 'Env <e@example.com>',
    });
    expect((await (await fromFile({})).options()).mail).toBeUndefined();
  });

  it('production refuses to start without a mail transport (built binary, exit 1, names what to set)', async () => {
    const dir = await tempDir();
    const env = { ...process.env };
    delete env.CUSTODIAN_SMTP_URL;
    const r = spawnSync(
      process.execPath,
      [bin, 'coordinator', 'start', '--mode', 'production', '--port', '0', '--data-dir', dir, '--no-signing'],
      { encoding: 'utf8', env, timeout: 60_000 },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/production mode needs a mail transport.*--smtp-url \/ CUSTODIAN_SMTP_URL/);
  });
});

describe('custodian admin init', () => {
  it('sends the bootstrap token from --bootstrap-token-file; without one it stops before calling', async () => {
    const dir = await tempDir();
    const tokenFile = join(dir, 'bootstrap-token');
    const c = await createCoordinator({
      db: await openPglite(),
      mode: 'development',
      mailboxDir: join(dir, 'mailbox'),
      bootstrapTokenFile: tokenFile,
      listen: { port: 0 },
      logger: false,
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
      webhooks: { keyEncryptionKey: new Uint8Array(32).fill(9), runWorker: false },
    });
    cleanups.push(() => c.stop());
    const url = await c.start();
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const io: CliIo = {
        out: (s) => out.push(s),
        err: (s) => err.push(s),
        env: { HOME: dir, CUSTODIAN_ADMIN_PASSWORD: 'correct horse battery staple' },
      };
      const program = new Command('custodian').exitOverride();
      registerAdminCommands(program, io);
      process.exitCode = 0;
      await program.parseAsync(['node', 'custodian', 'admin', '--coordinator-url', url, ...args]);
      const code = Number(process.exitCode ?? 0);
      process.exitCode = 0;
      return { out: out.join('\n'), err: err.join('\n'), code };
    };
    const base = ['init', '--email', 'ops@example.com', '--name', 'Ops'];
    const none = await cli(...base);
    expect(none.code).not.toBe(0);
    expect(none.err).toMatch(/--bootstrap-token-file <data-dir>\/bootstrap-token/);
    const wrong = await cli(...base, '--bootstrap-token', 'cbt_wrong');
    expect(wrong.code).not.toBe(0);
    expect(wrong.err).toMatch(/401 BOOTSTRAP_TOKEN_INVALID/);
    expect(await c.users.initialised()).toBe(false);
    const ok = await cli(...base, '--bootstrap-token-file', tokenFile);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/^instance initialised: admin ops@example.com/);
    await expect(stat(tokenFile)).rejects.toThrow(/ENOENT/);
  });
});
