/**
 * `custodian admin …`: every admin function of the coordinator from the command line, over the
 * admin HTTP API. Output: human tables by default, `--json` for machines. The session token from
 * `admin login` is kept in a 0600 file (default `$XDG_CONFIG_HOME/custodian/admin-session.json`),
 * or given by `--token` / `CUSTODIAN_ADMIN_TOKEN`.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { type Command, Option } from 'commander';
import { CoordinatorError } from './errors.js';
import { readMailbox } from './mailer.js';
import { registerTransferCommands } from './transfers/cli.js';

/** Where the CLI writes and reads (injectable for tests). */
export interface CliIo {
  out(s: string): void;
  err(s: string): void;
  env: Record<string, string | undefined>;
  /** Ask a question on the terminal; `secret` hides the answer. */
  prompt?(question: string, secret: boolean): Promise<string>;
}

const defaultIo: CliIo = {
  out: (s) => process.stdout.write(`${s}\n`),
  err: (s) => process.stderr.write(`${s}\n`),
  env: process.env,
  async prompt(question, secret) {
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    if (secret) {
      const w = rl as unknown as { _writeToOutput: (s: string) => void };
      let asked = false;
      w._writeToOutput = (s: string) => {
        if (!asked) {
          process.stdout.write(s);
          asked = true;
        }
      };
    }
    try {
      return (await rl.question(question)).trim();
    } finally {
      rl.close();
      if (secret) process.stdout.write('\n');
    }
  },
};

/** Error raised for a failed admin API call; `problem` is the RFC 9457 body. */
export class AdminCliError extends CoordinatorError {
  constructor(
    message: string,
    readonly problem?: unknown,
  ) {
    const code = (problem as { code?: unknown } | undefined)?.code;
    super(typeof code === 'string' && code !== '' ? code : 'ADMIN_REQUEST_FAILED', message);
  }
}

interface GlobalOpts {
  coordinatorUrl?: string;
  token?: string;
  json?: boolean;
  sessionFile?: string;
}

function sessionFileOf(o: GlobalOpts, io: CliIo): string {
  if (o.sessionFile) return o.sessionFile;
  const base = io.env.XDG_CONFIG_HOME ?? join(io.env.HOME ?? homedir(), '.config');
  return join(base, 'custodian', 'admin-session.json');
}

/** Render rows as an aligned text table (columns from the first row's keys, objects as JSON). */
export function formatTable(rows: readonly Record<string, unknown>[], columns?: string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? Object.keys(rows[0]!);
  const cell = (v: unknown) =>
    v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(cols.map((c) => c.toUpperCase())),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
  ].join('\n');
}

/**
 * Register `admin` and all its subcommands on a commander program.
 * @param program the root `custodian` command
 * @param io output and environment (tests pass their own)
 * @returns the `admin` command
 */
export function registerAdminCommands(program: Command, io: CliIo = defaultIo): Command {
  const admin = program
    .command('admin')
    .description('administer a coordinator: users, API keys, signers, devices, master key, webhooks, audit')
    .addOption(
      new Option(
        '--coordinator-url <url>',
        'coordinator base URL (default: the saved login, else http://127.0.0.1:8080)',
      ).env('CUSTODIAN_URL'),
    )
    .addOption(
      new Option('--token <token>', 'admin session token (default: the saved login)').env('CUSTODIAN_ADMIN_TOKEN'),
    )
    .option('--session-file <path>', 'where `admin login` saves the session')
    .option('--json', 'print JSON instead of tables');

  const g = (): GlobalOpts => admin.opts<GlobalOpts>();

  async function session(): Promise<{ url: string; token?: string }> {
    const o = g();
    let saved: { url?: string; token?: string } = {};
    try {
      saved = JSON.parse(await readFile(sessionFileOf(o, io), 'utf8'));
    } catch {}
    const url = (o.coordinatorUrl ?? saved.url ?? io.env.CUSTODIAN_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    const token =
      o.token ??
      io.env.CUSTODIAN_ADMIN_TOKEN ??
      (o.coordinatorUrl === undefined || o.coordinatorUrl === saved.url ? saved.token : undefined);
    return token === undefined ? { url } : { url, token };
  }

  // biome-ignore lint/suspicious/noExplicitAny: admin API responses are JSON whose fields the commands read
  async function call(method: string, path: string, body?: unknown, auth = true): Promise<any> {
    const s = await session();
    const headers: Record<string, string> = {};
    if (auth) {
      if (s.token === undefined) throw new AdminCliError('not logged in: run `custodian admin login` or pass --token');
      headers.authorization = `Bearer ${s.token}`;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(s.url + path, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (e) {
      throw new AdminCliError(`cannot reach ${s.url}: ${(e as Error).message}`);
    }
    const text = await res.text();
    const data = text === '' ? undefined : JSON.parse(text);
    if (!res.ok) {
      const p = data as
        | { code?: string; detail?: string; title?: string; errors?: { field: string; message: string }[] }
        | undefined;
      const fields = p?.errors?.map((e) => `${e.field}: ${e.message}`).join('; ');
      const hint = p?.code === 'STEP_UP_REQUIRED' ? ' — run `custodian admin step-up`, then retry' : '';
      throw new AdminCliError(
        `${res.status} ${p?.code ?? ''}: ${p?.detail ?? p?.title ?? text}${fields ? ` (${fields})` : ''}${hint}`,
        data,
      );
    }
    return data;
  }

  function print(data: unknown, columns?: string[]) {
    if (g().json) return io.out(JSON.stringify(data ?? null, null, 2));
    if (data === undefined) return io.out('ok');
    const envelope = data as { data?: unknown } | null;
    const rows: Record<string, unknown>[] | undefined = Array.isArray(data)
      ? data
      : envelope !== null && typeof envelope === 'object' && Array.isArray(envelope.data)
        ? (envelope.data as Record<string, unknown>[])
        : undefined;
    if (rows !== undefined) {
      io.out(formatTable(rows, columns));
      const d = data as { page?: number; total?: number; page_size?: number };
      if (!Array.isArray(data) && d.total !== undefined)
        io.out(`page ${d.page} of ${Math.max(1, Math.ceil(d.total / (d.page_size ?? 1)))} (${d.total} total)`);
      return;
    }
    if (data !== null && typeof data === 'object') {
      const entries = Object.entries(data as Record<string, unknown>).map(([field, value]) => ({ field, value }));
      return io.out(formatTable(entries));
    }
    io.out(String(data));
  }

  /** Wrap an action so API errors become a message and exit code 1. */
  const run =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: A) => {
      try {
        await fn(...args);
      } catch (e) {
        if (e instanceof AdminCliError) {
          if (g().json && e.problem !== undefined) io.err(JSON.stringify(e.problem));
          else io.err(`error: ${e.message}`);
          process.exitCode = 1;
          return;
        }
        throw e;
      }
    };

  async function ask(value: string | undefined, envName: string, question: string, secret: boolean): Promise<string> {
    const v = value ?? io.env[envName];
    if (v !== undefined && v !== '') return v;
    if (io.prompt === undefined)
      throw new AdminCliError(`${question.replace(/: $/, '')} is required (or set ${envName})`);
    return io.prompt(question, secret);
  }

  const q = (params: Record<string, string | number | undefined>) => {
    const s = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined) s.set(k, String(v));
    const t = s.toString();
    return t === '' ? '' : `?${t}`;
  };
  const pageOpts = (c: Command) =>
    c.option('--page <n>', 'page number', '1').option('--page-size <n>', 'items per page (max 200)', '50');

  // ---- session ----
  admin
    .command('init')
    .description('initialise a new instance: the first account (Admin) and the first profile')
    .requiredOption('--email <email>')
    .requiredOption('--name <name>')
    .option('--password <password>', 'at least 12 characters (or CUSTODIAN_ADMIN_PASSWORD, or prompt)')
    .option('--profile-name <name>', 'name of the first profile', 'default')
    .action(
      run(async (o: { email: string; name: string; password?: string; profileName: string }) => {
        const password = await ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true);
        const r = await call(
          'POST',
          '/admin/v1/init',
          { email: o.email, name: o.name, password, profile_name: o.profileName },
          false,
        );
        if (g().json) return print(r);
        io.out(
          `instance initialised: admin ${r.user.email} (${r.user.user_id}), profile ${r.profile.name} (${r.profile.profile_id})`,
        );
      }),
    );

  admin
    .command('login')
    .description('log in: password, then the email code (or TOTP code); saves the session')
    .requiredOption('--email <email>')
    .option('--password <password>', 'or CUSTODIAN_ADMIN_PASSWORD, or prompt')
    .option('--code <code>', 'second-factor code (else prompt)')
    .option('--mailbox <dir>', 'development: read the email code from this mailbox folder')
    .action(
      run(async (o: { email: string; password?: string; code?: string; mailbox?: string }) => {
        const password = await ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true);
        const c = await call('POST', '/admin/v1/login', { email: o.email, password }, false);
        let code = o.code;
        if (code === undefined && o.mailbox !== undefined && c.method === 'email') {
          const mails = (await readMailbox(o.mailbox)).filter((m) =>
            m.to.toLowerCase().includes(o.email.toLowerCase()),
          );
          code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
          if (code === undefined) throw new AdminCliError(`no login code for ${o.email} in ${o.mailbox}`);
        }
        code ??= await ask(
          undefined,
          'CUSTODIAN_ADMIN_CODE',
          c.method === 'totp' ? 'Authenticator code: ' : 'Code from the email: ',
          false,
        );
        const v = await call('POST', '/admin/v1/login/verify', { challenge_id: c.challenge_id, code }, false);
        const file = sessionFileOf(g(), io);
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(
          file,
          JSON.stringify({ url: (await session()).url, token: v.token, expires_at: v.expires_at }),
          { mode: 0o600 },
        );
        if (g().json) return print({ user: v.user, expires_at: v.expires_at, session_file: file });
        io.out(`logged in as ${v.user.email} (${v.user.role}) until ${v.expires_at}`);
      }),
    );

  admin
    .command('step-up')
    .description(
      're-authenticate the saved session for sensitive actions (API keys, webhooks, users, TOTP) for a few minutes: ' +
        'the current authenticator code if TOTP is enabled, else the password',
    )
    .option('--password <password>', 'without TOTP: the password (or CUSTODIAN_ADMIN_PASSWORD, or prompt)')
    .option('--code <code>', 'with TOTP: the current authenticator code (or CUSTODIAN_ADMIN_CODE, or prompt)')
    .action(
      run(async (o: { password?: string; code?: string }) => {
        const me = await call('GET', '/admin/v1/me');
        const body = me.totp_enabled
          ? { code: await ask(o.code, 'CUSTODIAN_ADMIN_CODE', 'Authenticator code: ', false) }
          : { password: await ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true) };
        const r = await call('POST', '/admin/v1/session/step-up', body);
        if (g().json) return print(r);
        io.out(`stepped up (${r.method}) until ${r.step_up_expires_at}`);
      }),
    );

  admin
    .command('logout')
    .description('revoke the session and forget it')
    .action(
      run(async () => {
        await call('POST', '/admin/v1/logout');
        await rm(sessionFileOf(g(), io), { force: true });
        print(undefined);
      }),
    );
  admin
    .command('whoami')
    .description('the logged-in user')
    .action(run(async () => print(await call('GET', '/admin/v1/me'))));

  admin
    .command('password')
    .description('change your own password (other sessions are signed out; you get an e-mail notice)')
    .option('--current <password>', 'current password (or CUSTODIAN_ADMIN_PASSWORD, or prompt)')
    .option('--new <password>', 'new password, hard to guess (or CUSTODIAN_NEW_PASSWORD, or prompt)')
    .action(
      run(async (o: { current?: string; new?: string }) => {
        const current_password = await ask(o.current, 'CUSTODIAN_ADMIN_PASSWORD', 'Current password: ', true);
        const new_password = await ask(o.new, 'CUSTODIAN_NEW_PASSWORD', 'New password: ', true);
        await call('POST', '/admin/v1/me/password', { current_password, new_password });
        if (g().json) return print({ changed: true });
        io.out('password changed; your other sessions were signed out');
      }),
    );

  const totp = admin.command('totp').description('authenticator app (TOTP) second factor');
  totp
    .command('enroll')
    .description('start enrollment: prints the secret and otpauth:// URI')
    .action(run(async () => print(await call('POST', '/admin/v1/me/totp'))));
  totp
    .command('confirm <code>')
    .description('confirm enrollment with a current code (used up: log in with a later one)')
    .action(run(async (code: string) => print(await call('POST', '/admin/v1/me/totp/confirm', { code }))));
  totp
    .command('disable <code>')
    .description('disable TOTP (email codes again)')
    .action(run(async (code: string) => print(await call('POST', '/admin/v1/me/totp/disable', { code }))));

  // ---- users ----
  const users = admin.command('users').description('users and roles (ADMIN, FINANCE_MANAGER, VIEWER)');
  pageOpts(users.command('list').description('list users')).action(
    run(async (o: { page: string; pageSize: string }) =>
      print(await call('GET', `/admin/v1/users${q({ page: o.page, page_size: o.pageSize })}`), [
        'user_id',
        'email',
        'name',
        'role',
        'totp_enabled',
        'blocked',
      ]),
    ),
  );
  users
    .command('create')
    .description('create a user')
    .requiredOption('--email <email>')
    .requiredOption('--name <name>')
    .addOption(new Option('--role <role>').choices(['ADMIN', 'FINANCE_MANAGER', 'VIEWER']).makeOptionMandatory())
    .option('--password <password>', 'initial password (or CUSTODIAN_NEW_USER_PASSWORD, or prompt)')
    .action(
      run(async (o: { email: string; name: string; role: string; password?: string }) => {
        const password = await ask(o.password, 'CUSTODIAN_NEW_USER_PASSWORD', 'Initial password: ', true);
        print(await call('POST', '/admin/v1/users', { email: o.email, name: o.name, role: o.role, password }));
      }),
    );
  users
    .command('show <user_id>')
    .description('one user')
    .action(run(async (id: string) => print(await call('GET', `/admin/v1/users/${encodeURIComponent(id)}`))));
  users
    .command('update <user_id>')
    .description('change role, name, blocked state or password')
    .addOption(new Option('--role <role>').choices(['ADMIN', 'FINANCE_MANAGER', 'VIEWER']))
    .option('--name <name>')
    .option('--block', 'block the user (revokes sessions)')
    .option('--unblock', 'unblock the user')
    .option('--password <password>', 'set a new password (revokes sessions)')
    .action(
      run(
        async (
          id: string,
          o: { role?: string; name?: string; block?: boolean; unblock?: boolean; password?: string },
        ) => {
          const body: Record<string, unknown> = {};
          if (o.role) body.role = o.role;
          if (o.name) body.name = o.name;
          if (o.block) body.blocked = true;
          if (o.unblock) body.blocked = false;
          if (o.password) body.password = o.password;
          print(await call('PATCH', `/admin/v1/users/${encodeURIComponent(id)}`, body));
        },
      ),
    );
  users
    .command('delete <user_id>')
    .description('delete a user')
    .action(run(async (id: string) => print(await call('DELETE', `/admin/v1/users/${encodeURIComponent(id)}`))));

  // ---- profiles and directory ----
  const profiles = admin.command('profiles').description('profiles and their enabled blockchains and assets');
  profiles
    .command('list')
    .description('list profiles')
    .action(run(async () => print(await call('GET', '/admin/v1/profiles'))));
  profiles
    .command('create <name>')
    .description('create a profile')
    .action(run(async (name: string) => print(await call('POST', '/admin/v1/profiles', { name }))));
  for (const kind of ['blockchains', 'assets'] as const) {
    pageOpts(profiles.command(`${kind} <profile_id>`).description(`${kind} enabled for a profile`)).action(
      run(async (p: string, o: { page: string; pageSize: string }) =>
        print(
          await call(
            'GET',
            `/admin/v1/profiles/${encodeURIComponent(p)}/${kind}${q({ page: o.page, page_size: o.pageSize })}`,
          ),
          kind === 'blockchains'
            ? ['blockchain_id', 'key', 'name', 'account_model', 'testnet']
            : ['asset_id', 'symbol', 'decimals', 'blockchain', 'kind'],
        ),
      ),
    );
    for (const enabled of [true, false]) {
      const singular = kind.slice(0, -1);
      profiles
        .command(`${enabled ? 'enable' : 'disable'}-${singular} <profile_id> <${singular}_id>`)
        .description(`${enabled ? 'enable' : 'disable'} a ${singular} for a profile`)
        .action(
          run(async (p: string, id: string) =>
            print(
              await call('PUT', `/admin/v1/profiles/${encodeURIComponent(p)}/${kind}/${encodeURIComponent(id)}`, {
                enabled,
              }),
            ),
          ),
        );
    }
  }

  // ---- wallets ----
  const wallets = admin.command('wallets').description('wallets (view; create as Admin)');
  pageOpts(wallets.command('list <profile_id>').description('wallet ids of a profile')).action(
    run(async (p: string, o: { page: string; pageSize: string }) =>
      print(
        await call(
          'GET',
          `/admin/v1/profiles/${encodeURIComponent(p)}/wallets${q({ page: o.page, page_size: o.pageSize })}`,
        ),
      ),
    ),
  );
  wallets
    .command('create <profile_id>')
    .description('create a wallet on one or more blockchains (addresses are derived at once)')
    .requiredOption('--blockchain <ids...>', 'blockchain ids')
    .option('--name <name>')
    .action(
      run(async (p: string, o: { blockchain: string[]; name?: string }) => {
        const w = await call('POST', `/admin/v1/profiles/${encodeURIComponent(p)}/wallets`, {
          blockchain_ids: o.blockchain,
          ...(o.name ? { name: o.name } : {}),
        });
        if (g().json) return print(w);
        io.out(`wallet ${w.wallet_id}${w.name ? ` (${w.name})` : ''}`);
        io.out(formatTable(w.addresses, ['blockchain_id', 'address', 'derivation_path']));
      }),
    );
  wallets
    .command('show <profile_id> <wallet_id>')
    .description('a wallet and its addresses')
    .action(
      run(async (p: string, w: string) => {
        const r = await call('GET', `/admin/v1/profiles/${encodeURIComponent(p)}/wallets/${encodeURIComponent(w)}`);
        if (g().json) return print(r);
        io.out(`wallet ${r.wallet_id}${r.name ? ` (${r.name})` : ''}, created ${r.created_at}`);
        io.out(formatTable(r.addresses, ['blockchain_id', 'address', 'address_type', 'derivation_path']));
      }),
    );
  pageOpts(wallets.command('balances <profile_id> <wallet_id>').description('balances of a wallet')).action(
    run(async (p: string, w: string, o: { page: string; pageSize: string }) =>
      print(
        await call(
          'GET',
          `/admin/v1/profiles/${encodeURIComponent(p)}/wallets/${encodeURIComponent(w)}/balances${q({ page: o.page, page_size: o.pageSize })}`,
        ),
        ['asset_id', 'symbol', 'amount', 'updated_at'],
      ),
    ),
  );

  // ---- API keys ----
  const keys = admin.command('api-keys').description('API keys (named, shown once, revocable)');
  pageOpts(keys.command('list').description('list API keys').option('--profile <profile_id>')).action(
    run(async (o: { profile?: string; page: string; pageSize: string }) =>
      print(
        await call('GET', `/admin/v1/api-keys${q({ profile_id: o.profile, page: o.page, page_size: o.pageSize })}`),
        ['api_key_id', 'profile_id', 'name', 'key_prefix', 'allowed_cidrs', 'created_at', 'revoked_at'],
      ),
    ),
  );
  keys
    .command('create')
    .description('create an API key; the key is printed once')
    .requiredOption('--profile <profile_id>')
    .requiredOption('--name <name>')
    .option(
      '--allowed-cidr <range...>',
      'only from these IPv4/IPv6 ranges or addresses, e.g. 10.0.0.0/8 2001:db8::/32 (default: any address)',
    )
    .action(
      run(async (o: { profile: string; name: string; allowedCidr?: string[] }) => {
        const k = await call('POST', '/admin/v1/api-keys', {
          profile_id: o.profile,
          name: o.name,
          ...(o.allowedCidr === undefined ? {} : { allowed_cidrs: o.allowedCidr }),
        });
        if (g().json) return print(k);
        io.out(
          `API key ${k.api_key_id} (${k.name}) for profile ${k.profile_id}` +
            `${k.allowed_cidrs ? `, usable only from ${k.allowed_cidrs.join(', ')}` : ''}:`,
        );
        io.out(k.api_key);
        io.out('Store it now: it is not shown again.');
      }),
    );
  keys
    .command('revoke <api_key_id>')
    .description('revoke an API key')
    .action(run(async (id: string) => print(await call('DELETE', `/admin/v1/api-keys/${encodeURIComponent(id)}`))));

  // ---- server signers ----
  const signers = admin.command('signers').description('server signers');
  signers
    .command('list')
    .description('registered server signers')
    .action(run(async () => print(await call('GET', '/admin/v1/signers'))));
  signers
    .command('add')
    .description('register a server signer')
    .requiredOption('--name <name>')
    .requiredOption('--peer-id <peer_id>', 'libp2p peer id')
    .requiredOption('--address <multiaddr>', 'e.g. /ip4/10.0.0.5/tcp/7400')
    .requiredOption('--fingerprint <fingerprint>', 'identity key fingerprint')
    .action(
      run(async (o: { name: string; peerId: string; address: string; fingerprint: string }) =>
        print(
          await call('POST', '/admin/v1/signers', {
            name: o.name,
            peer_id: o.peerId,
            address: o.address,
            fingerprint: o.fingerprint,
          }),
        ),
      ),
    );
  signers
    .command('remove <signer_id>')
    .description('remove a server signer')
    .action(run(async (id: string) => print(await call('DELETE', `/admin/v1/signers/${encodeURIComponent(id)}`))));

  // ---- devices ----
  const devices = admin.command('devices').description('mobile signer devices and enrollment requests');
  devices
    .command('list')
    .description('devices')
    .addOption(new Option('--status <status>').choices(['PENDING', 'APPROVED', 'REJECTED', 'REMOVED']))
    .action(
      run(async (o: { status?: string }) =>
        print(await call('GET', `/admin/v1/devices${q({ status: o.status })}`), [
          'device_id',
          'name',
          'platform',
          'os_version',
          'status',
          'fingerprint',
        ]),
      ),
    );
  devices
    .command('show <device_id>')
    .description('one device')
    .action(run(async (id: string) => print(await call('GET', `/admin/v1/devices/${encodeURIComponent(id)}`))));
  devices
    .command('approve <device_id>')
    .description('approve after comparing the fingerprint shown on the phone, binding the device to its user')
    .requiredOption('--fingerprint <fingerprint>', 'as read from the phone (spaces optional)')
    .requiredOption(
      '--user <user>',
      "the dashboard user who holds the phone: user id or e-mail (only an Admin's own devices sign policies)",
    )
    .action(
      run(async (id: string, o: { fingerprint: string; user: string }) => {
        let userId = o.user;
        if (o.user.includes('@')) {
          const users = (await call('GET', '/admin/v1/users?page_size=200')) as {
            data: { user_id: string; email: string }[];
          };
          const u = users.data.find((x) => x.email.toLowerCase() === o.user.toLowerCase());
          if (u === undefined) throw new Error(`no user ${o.user}`);
          userId = u.user_id;
        }
        print(
          await call('POST', `/admin/v1/devices/${encodeURIComponent(id)}/approve`, {
            fingerprint: o.fingerprint,
            user_id: userId,
          }),
        );
      }),
    );
  devices
    .command('reject <device_id>')
    .description('reject an enrollment request')
    .action(run(async (id: string) => print(await call('POST', `/admin/v1/devices/${encodeURIComponent(id)}/reject`))));
  devices
    .command('remove <device_id>')
    .description('remove a device')
    .action(run(async (id: string) => print(await call('DELETE', `/admin/v1/devices/${encodeURIComponent(id)}`))));

  // ---- master keys ----
  const mk = admin.command('master-keys').description('the master key (DKG ceremony) and ceremonies');
  mk.command('list')
    .description('master key records (public keys and chain codes)')
    .action(
      run(async () =>
        print(await call('GET', '/admin/v1/master-keys'), [
          'master_key_id',
          'threshold',
          'secp256k1_public_key',
          'created_at',
        ]),
      ),
    );
  mk.command('create')
    .description('run the k-of-n ceremony among exactly the selected signers (5-minute timeout)')
    .requiredOption('--threshold <k>', 'signers needed to sign')
    .option('--server <signer_id...>', 'server signers', [])
    .option('--device <device_id...>', 'approved mobile devices', [])
    .option('--wait', 'wait for the outcome, printing progress')
    .action(
      run(async (o: { threshold: string; server: string[]; device: string[]; wait?: boolean }) => {
        const signers = [
          ...o.server.map((id) => ({ kind: 'server', id })),
          ...o.device.map((id) => ({ kind: 'device', id })),
        ];
        let c = await call('POST', '/admin/v1/master-keys', { threshold: Number(o.threshold), signers });
        if (o.wait) {
          let last = '';
          while (c.status === 'RUNNING') {
            const p = `${c.progress.phase} ${c.progress.parties_ready}/${c.progress.parties_total}`;
            if (p !== last && !g().json) io.out(p);
            last = p;
            await new Promise((r) => setTimeout(r, 1000));
            c = await call('GET', `/admin/v1/ceremonies/${c.ceremony_id}`);
          }
        }
        print(c);
        if (c.status === 'FAILED' || c.status === 'TIMED_OUT') process.exitCode = 1;
      }),
    );
  const cer = admin.command('ceremonies').description('ceremony records');
  cer
    .command('list')
    .description('ceremonies, newest first')
    .action(
      run(async () =>
        print(await call('GET', '/admin/v1/ceremonies'), [
          'ceremony_id',
          'kind',
          'status',
          'threshold',
          'started_at',
          'finished_at',
          'error',
        ]),
      ),
    );
  cer
    .command('show <ceremony_id>')
    .description('progress and outcome')
    .action(run(async (id: string) => print(await call('GET', `/admin/v1/ceremonies/${encodeURIComponent(id)}`))));

  // ---- webhooks ----
  const hooks = admin.command('webhooks').description('webhook registrations of a profile');
  hooks
    .command('list <profile_id>')
    .description('webhooks')
    .action(
      run(async (p: string) =>
        print(await call('GET', `/admin/v1/profiles/${encodeURIComponent(p)}/webhooks`), [
          'webhook_id',
          'url',
          'event_types',
          'description',
        ]),
      ),
    );
  hooks
    .command('create <profile_id>')
    .description('register a webhook (HTTPS)')
    .requiredOption('--url <url>')
    .requiredOption('--events <types...>', 'event types, e.g. TRANSFER_UPDATED WALLET_CREATED')
    .option('--description <text>')
    .action(
      run(async (p: string, o: { url: string; events: string[]; description?: string }) =>
        print(
          await call('POST', `/admin/v1/profiles/${encodeURIComponent(p)}/webhooks`, {
            url: o.url,
            event_types: o.events.flatMap((e) => e.split(',')).filter(Boolean),
            ...(o.description !== undefined ? { description: o.description } : {}),
          }),
        ),
      ),
    );
  hooks
    .command('show <profile_id> <webhook_id>')
    .description('one webhook')
    .action(
      run(async (p: string, id: string) =>
        print(await call('GET', `/admin/v1/profiles/${encodeURIComponent(p)}/webhooks/${encodeURIComponent(id)}`)),
      ),
    );
  hooks
    .command('update <profile_id> <webhook_id>')
    .description('change URL, event types or description')
    .option('--url <url>')
    .option('--events <types...>')
    .option('--description <text>')
    .action(
      run(async (p: string, id: string, o: { url?: string; events?: string[]; description?: string }) => {
        const body: Record<string, unknown> = {};
        if (o.url) body.url = o.url;
        if (o.events) body.event_types = o.events.flatMap((e) => e.split(',')).filter(Boolean);
        if (o.description !== undefined) body.description = o.description;
        print(
          await call('PATCH', `/admin/v1/profiles/${encodeURIComponent(p)}/webhooks/${encodeURIComponent(id)}`, body),
        );
      }),
    );
  hooks
    .command('delete <profile_id> <webhook_id>')
    .description('delete a webhook')
    .action(
      run(async (p: string, id: string) =>
        print(await call('DELETE', `/admin/v1/profiles/${encodeURIComponent(p)}/webhooks/${encodeURIComponent(id)}`)),
      ),
    );

  const E = encodeURIComponent;
  pageOpts(
    hooks
      .command('notifications <profile_id> <webhook_id>')
      .description('delivery notifications of a webhook, newest first')
      .option('--status <status>', 'PENDING | DELIVERED | FAILED'),
  ).action(
    run(async (p: string, id: string, o: { page: string; pageSize: string; status?: string }) =>
      print(
        await call(
          'GET',
          `/admin/v1/profiles/${E(p)}/webhooks/${E(id)}/notifications${q({ page: o.page, page_size: o.pageSize, ...(o.status ? { status: o.status } : {}) })}`,
        ),
        ['notification_id', 'event_type', 'status', 'attempt_count', 'last_response_code', 'next_attempt_at'],
      ),
    ),
  );
  hooks
    .command('redeliver <profile_id> <webhook_id> <notification_id>')
    .description('redeliver a FAILED notification (a fresh series of up to 5 attempts, same event_id)')
    .action(
      run(async (p: string, id: string, n: string) =>
        print(await call('POST', `/admin/v1/profiles/${E(p)}/webhooks/${E(id)}/notifications/${E(n)}/redeliver`)),
      ),
    );
  hooks
    .command('keys')
    .description('webhook signing keys (kid, state, activation, retirement, expiry)')
    .action(
      run(async () =>
        print(await call('GET', '/admin/v1/webhook-signing-keys'), [
          'kid',
          'state',
          'created_at',
          'activates_at',
          'retires_at',
          'expires_at',
        ]),
      ),
    );
  hooks
    .command('rotate-key')
    .description('rotate the signing key: published now, signs after the lead time; the old key overlaps')
    .option('--lead-seconds <n>', 'seconds between publication and first signature (default: configured, 1 h)')
    .action(
      run(async (o: { leadSeconds?: string }) =>
        print(
          await call(
            'POST',
            '/admin/v1/webhook-signing-keys/rotate',
            o.leadSeconds !== undefined ? { lead_seconds: Number.parseInt(o.leadSeconds, 10) } : {},
          ),
        ),
      ),
    );

  wallets
    .command('rename <profile_id> <wallet_id>')
    .description('rename a wallet (emits WALLET_UPDATED)')
    .requiredOption('--name <name>')
    .action(
      run(async (p: string, id: string, o: { name: string }) =>
        print(await call('PATCH', `/admin/v1/profiles/${E(p)}/wallets/${E(id)}`, { name: o.name })),
      ),
    );

  // ---- instance-level webhooks (instance and security events only) ----
  const ihooks = admin
    .command('instance-webhooks')
    .description('instance-level webhooks: user, device, server signer and security events (ROLE_SCOPE_LOGIN …)');
  const types = (events: string[]) => events.flatMap((e) => e.split(',')).filter(Boolean);
  ihooks
    .command('list')
    .description('instance-level webhooks')
    .action(
      run(async () =>
        print(await call('GET', '/admin/v1/webhooks'), ['webhook_id', 'url', 'event_types', 'description']),
      ),
    );
  ihooks
    .command('create')
    .description('register an instance-level webhook (HTTPS)')
    .requiredOption('--url <url>')
    .requiredOption('--events <types...>', 'instance event types, e.g. USER_CREATED ROLE_SCOPE_LOGIN')
    .option('--description <text>')
    .action(
      run(async (o: { url: string; events: string[]; description?: string }) =>
        print(
          await call('POST', '/admin/v1/webhooks', {
            url: o.url,
            event_types: types(o.events),
            ...(o.description !== undefined ? { description: o.description } : {}),
          }),
        ),
      ),
    );
  ihooks
    .command('show <webhook_id>')
    .description('one instance-level webhook')
    .action(run(async (id: string) => print(await call('GET', `/admin/v1/webhooks/${E(id)}`))));
  ihooks
    .command('update <webhook_id>')
    .description('change URL, event types or description')
    .option('--url <url>')
    .option('--events <types...>')
    .option('--description <text>')
    .action(
      run(async (id: string, o: { url?: string; events?: string[]; description?: string }) => {
        const body: Record<string, unknown> = {};
        if (o.url) body.url = o.url;
        if (o.events) body.event_types = types(o.events);
        if (o.description !== undefined) body.description = o.description;
        print(await call('PATCH', `/admin/v1/webhooks/${E(id)}`, body));
      }),
    );
  ihooks
    .command('delete <webhook_id>')
    .description('delete an instance-level webhook')
    .action(run(async (id: string) => print(await call('DELETE', `/admin/v1/webhooks/${E(id)}`))));
  pageOpts(
    ihooks
      .command('notifications <webhook_id>')
      .description('delivery notifications of an instance-level webhook, newest first')
      .option('--status <status>', 'PENDING | DELIVERED | FAILED'),
  ).action(
    run(async (id: string, o: { page: string; pageSize: string; status?: string }) =>
      print(
        await call(
          'GET',
          `/admin/v1/webhooks/${E(id)}/notifications${q({ page: o.page, page_size: o.pageSize, ...(o.status ? { status: o.status } : {}) })}`,
        ),
        ['notification_id', 'event_type', 'status', 'attempt_count', 'last_response_code', 'next_attempt_at'],
      ),
    ),
  );
  ihooks
    .command('redeliver <webhook_id> <notification_id>')
    .description('redeliver a FAILED notification (a fresh series of up to 5 attempts, same event_id)')
    .action(
      run(async (id: string, n: string) =>
        print(await call('POST', `/admin/v1/webhooks/${E(id)}/notifications/${E(n)}/redeliver`)),
      ),
    );

  // ---- wallet groups, address groups ----
  for (const kind of ['wallet', 'address'] as const) {
    const grp = admin
      .command(`${kind}-groups`)
      .description(
        kind === 'wallet'
          ? 'wallet groups: named sets of wallets; assigned users are scoped to them'
          : 'address groups: named address-book sets referenced by whitelist policies',
      );
    const base = (p: string) => `/admin/v1/profiles/${E(p)}/${kind}-groups`;
    grp
      .command('list <profile_id>')
      .action(run(async (p: string) => print(await call('GET', base(p)), [`${kind}_group_id`, 'name', 'description'])));
    grp
      .command('show <profile_id> <group_id>')
      .action(run(async (p: string, id: string) => print(await call('GET', `${base(p)}/${E(id)}`))));
    const members = (o: { wallet?: string[]; entry?: string[] }) => {
      if (kind === 'wallet') return o.wallet === undefined ? {} : { wallet_ids: o.wallet };
      if (o.entry === undefined) return {};
      return {
        entries: o.entry.map((e) => {
          const [blockchain_id, address, ...label] = e.split(':');
          return { blockchain_id, address, label: label.length > 0 ? label.join(':') : null };
        }),
      };
    };
    for (const verb of ['create', 'update'] as const) {
      const c = grp.command(verb === 'create' ? 'create <profile_id>' : 'update <profile_id> <group_id>');
      if (verb === 'create') c.requiredOption('--name <name>');
      else c.option('--name <name>');
      c.option('--description <text>');
      if (kind === 'wallet') c.option('--wallet <wallet_ids...>', 'the group wallets (replaces the set)');
      else c.option('--entry <entries...>', 'address-book entries blockchain_id:address[:label] (replaces the set)');
      c.action(
        run(async (...args: unknown[]) => {
          const p = args[0] as string;
          const id = verb === 'update' ? (args[1] as string) : undefined;
          const o = args[verb === 'update' ? 2 : 1] as {
            name?: string;
            description?: string;
            wallet?: string[];
            entry?: string[];
          };
          const body = {
            ...(o.name !== undefined ? { name: o.name } : {}),
            ...(o.description !== undefined ? { description: o.description } : {}),
            ...members(o),
          };
          print(await call(verb === 'create' ? 'POST' : 'PATCH', id ? `${base(p)}/${E(id)}` : base(p), body));
        }),
      );
    }
    grp
      .command('delete <profile_id> <group_id>')
      .action(run(async (p: string, id: string) => print(await call('DELETE', `${base(p)}/${E(id)}`))));
    if (kind === 'wallet') {
      grp
        .command('assign <profile_id> <group_id> <user_id>')
        .description('assign a user to the group')
        .option('--remove', 'remove the user instead')
        .action(
          run(async (p: string, id: string, u: string, o: { remove?: boolean }) =>
            print(await call(o.remove ? 'DELETE' : 'PUT', `${base(p)}/${E(id)}/users/${E(u)}`)),
          ),
        );
    }
  }

  // ---- audit, mailbox ----
  pageOpts(admin.command('audit').description('the append-only audit log, newest first')).action(
    run(async (o: { page: string; pageSize: string }) =>
      print(await call('GET', `/admin/v1/audit${q({ page: o.page, page_size: o.pageSize })}`), [
        'at',
        'action',
        'actor_user_id',
        'target_type',
        'target_id',
      ]),
    ),
  );
  admin
    .command('mailbox')
    .description('development: read the coordinator mailbox folder (<data>/mailbox)')
    .requiredOption('--dir <dir>', 'mailbox folder')
    .option('--last', 'only the newest message')
    .action(
      run(async (o: { dir: string; last?: boolean }) => {
        const mails = await readMailbox(o.dir);
        const shown = o.last ? mails.slice(-1) : mails;
        if (g().json) return print(shown);
        for (const m of shown) io.out(`--- ${m.file}\nTo: ${m.to}\nSubject: ${m.subject}\n\n${m.text}\n`);
        if (shown.length === 0) io.out('(no messages)');
      }),
    );
  registerTransferCommands(admin, {
    call,
    print,
    run,
    q,
    pageOpts,
    fail: (message) => {
      throw new AdminCliError(message);
    },
  });
  return admin;
}
