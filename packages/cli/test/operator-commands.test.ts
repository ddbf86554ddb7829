/**
 * The operator guide's commands, followed literally (issue #29 "Docs that work when followed
 * literally"): the built `custodian` binary as a separate process, stdin not a terminal.
 * - `coordinator peer-id` never creates an identity unless `--create`;
 * - `signer peer-id` reads a node's peer id and fingerprint and never creates one;
 * - `admin login` without a code and without a terminal fails at once, before asking the
 *   coordinator for a login code.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMailbox } from '@custodian/coordinator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from '../../coordinator/test/helpers.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** Run the built CLI with stdin not a terminal (closed at once); never waits longer than `ms`. */
function run(
  args: string[],
  env: Record<string, string> = {},
  ms = 60_000,
): Promise<{ code: number | null; out: string; err: string; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: dirs[0] ?? tmpdir(), ...env },
      detached: true,
    });
    p.stdin.end();
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    let timedOut = false;
    const t = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-(p.pid as number), 'SIGKILL');
      } catch {}
    }, ms);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, out, err, timedOut });
    });
  });
}

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'custodian-ops-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('custodian coordinator peer-id', () => {
  it('refuses a data folder without an identity and creates nothing', async () => {
    const dir = await tempDir();
    const r = await run(['coordinator', 'peer-id', '--data-dir', dir]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/no coordinator identity at .*coordinator-p2p\.key.*--create/);
    expect(await readdir(dir)).toEqual([]);
    // a data folder that does not exist at all is not created either
    const missing = join(dir, 'not-there');
    expect((await run(['coordinator', 'peer-id', '--data-dir', missing])).code).toBe(1);
    await expect(stat(missing)).rejects.toThrow(/ENOENT/);
  });

  it('--create makes the identity (0600) once; later calls print the same peer id', async () => {
    const dir = join(await tempDir(), 'coordinator');
    const created = await run(['coordinator', 'peer-id', '--data-dir', dir, '--create']);
    expect(created.code).toBe(0);
    const peerId = created.out.trim();
    expect(peerId).toMatch(/^12D3KooW[1-9A-HJ-NP-Za-km-z]+$/);
    expect((await stat(join(dir, 'coordinator-p2p.key'))).mode & 0o777).toBe(0o600);
    const again = await run(['coordinator', 'peer-id', '--data-dir', dir]);
    expect(again.code).toBe(0);
    expect(again.out.trim()).toBe(peerId);
    expect((await run(['coordinator', 'peer-id', '--data-dir', dir, '--create'])).out.trim()).toBe(peerId);
  });
});

describe('custodian signer peer-id', () => {
  it('prints the peer id and fingerprint `signer init` printed, without the passphrase; refuses an empty folder', async () => {
    const root = await tempDir();
    const data = join(root, 'signer');
    const pass = join(root, 'passphrase');
    await writeFile(pass, 'a passphrase for this test only\n', { mode: 0o600 });
    const init = await run(['signer', 'init', '-d', data, '--passphrase-file', pass]);
    expect(init.code).toBe(0);
    const ids = JSON.parse(init.out) as { peerId: string; fingerprint: string };
    const read = await run(['signer', 'peer-id', '-d', data]);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.out)).toEqual(ids);
    const empty = join(root, 'empty');
    const r = await run(['signer', 'peer-id', '-d', empty]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no signer identity at .*identity\.json.*custodian signer init/);
    await expect(stat(empty)).rejects.toThrow(/ENOENT/);
  });
});

describe('custodian signer start', () => {
  it('refuses a data folder without an identity (never creates one) and names `signer init`', async () => {
    const root = await tempDir();
    const pass = join(root, 'passphrase');
    await writeFile(pass, 'a passphrase for this test only\n', { mode: 0o600 });
    const config = join(root, 'signer.json');
    await writeFile(
      config,
      JSON.stringify({
        dataDir: './signer',
        peers: [],
        coordinator: { peerId: '12D3KooWDriB8JmATtubbnW4d6iuWp8tUHCsbSXp3zjBtPpPbwr9' },
        passphrase: { file: pass },
        trustedAdminDevices: [],
      }),
    );
    const r = await run(['signer', 'start', '-c', config]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no signer identity at .*identity\.json.*custodian signer init/);
    await expect(stat(join(root, 'signer', 'identity.json'))).rejects.toThrow(/ENOENT/);
  });
});

describe('custodian admin login without a terminal', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ masterKey: false });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('fails non-zero at once when there is no code, no CUSTODIAN_ADMIN_CODE and no terminal; no code is mailed', async () => {
    const before = (await readMailbox(h.c.mailboxDir as string)).length;
    const session = join(await tempDir(), 'session.json');
    const r = await run(
      ['admin', '--coordinator-url', h.url, '--session-file', session, 'login', '--email', ADMIN_EMAIL],
      { CUSTODIAN_ADMIN_PASSWORD: ADMIN_PASSWORD },
      30_000,
    );
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/second-factor code is required.*--code.*CUSTODIAN_ADMIN_CODE/);
    await expect(stat(session)).rejects.toThrow(/ENOENT/);
    // refused before the password was sent: no login challenge, no code e-mail
    expect((await readMailbox(h.c.mailboxDir as string)).length).toBe(before);
  });

  it('without a password and without a terminal it fails naming the variable', async () => {
    const r = await run(['admin', '--coordinator-url', h.url, 'login', '--email', ADMIN_EMAIL, '--code', '123456']);
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/Password is required \(or set CUSTODIAN_ADMIN_PASSWORD\)/);
  });

  it('with a code source (here the development mailbox) it still logs in without a terminal', async () => {
    const session = join(await tempDir(), 'session.json');
    const r = await run(
      [
        'admin',
        '--coordinator-url',
        h.url,
        '--session-file',
        session,
        'login',
        '--email',
        ADMIN_EMAIL,
        '--mailbox',
        h.c.mailboxDir as string,
      ],
      { CUSTODIAN_ADMIN_PASSWORD: ADMIN_PASSWORD },
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/logged in as admin@example.com/);
    expect((await stat(session)).mode & 0o777).toBe(0o600);
  });
});
