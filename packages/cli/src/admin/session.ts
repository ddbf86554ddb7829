/**
 * `custodian admin init | login | step-up | logout | whoami | password | totp …`: the instance's
 * first account, logging in (password, then the email or TOTP code; the session is saved in a
 * 0600 file), step-up re-authentication for sensitive actions, and one's own password and TOTP.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { readMailbox } from '@custodian/coordinator';
import type { AdminContext } from './context.js';
import { AdminCliError } from './http.js';

/**
 * The bootstrap token of `admin init`: `--bootstrap-token-file` (trimmed), else `--bootstrap-token`,
 * else env `CUSTODIAN_BOOTSTRAP_TOKEN`.
 * @throws AdminCliError (ADMIN_REQUEST_FAILED) when none is given or the file is unreadable/empty
 */
async function bootstrapToken(
  o: { bootstrapTokenFile?: string; bootstrapToken?: string },
  env: Record<string, string | undefined>,
): Promise<string> {
  if (o.bootstrapTokenFile !== undefined) {
    const t = await readFile(o.bootstrapTokenFile, 'utf8').then(
      (s) => s.trim(),
      () => '',
    );
    if (t === '')
      throw new AdminCliError(
        `bootstrap token file ${o.bootstrapTokenFile} is unreadable or empty (it exists only until the instance is initialised; restart the coordinator to make a new one)`,
      );
    return t;
  }
  const t = o.bootstrapToken ?? env.CUSTODIAN_BOOTSTRAP_TOKEN;
  if (t === undefined || t.trim() === '')
    throw new AdminCliError(
      'admin init needs the one-time bootstrap token the coordinator wrote at its first start: ' +
        '--bootstrap-token-file <data-dir>/bootstrap-token (or --bootstrap-token, or env CUSTODIAN_BOOTSTRAP_TOKEN)',
    );
  return t.trim();
}

/** Register the session commands on `admin`. */
export function registerSessionCommands(ctx: AdminContext): void {
  const { admin, io } = ctx;
  admin
    .command('init')
    .description('initialise a new instance: the first account (Admin) and the first profile')
    .requiredOption('--email <email>')
    .requiredOption('--name <name>')
    .option('--password <password>', 'at least 12 characters (or CUSTODIAN_ADMIN_PASSWORD, or prompt)')
    .option('--profile-name <name>', 'name of the first profile', 'default')
    .option(
      '--bootstrap-token-file <path>',
      'the one-time token the coordinator wrote at its first start (<data-dir>/bootstrap-token)',
    )
    .option('--bootstrap-token <token>', 'the token itself (or env CUSTODIAN_BOOTSTRAP_TOKEN)')
    .action(
      ctx.run(
        async (o: {
          email: string;
          name: string;
          password?: string;
          profileName: string;
          bootstrapTokenFile?: string;
          bootstrapToken?: string;
        }) => {
          const token = await bootstrapToken(o, io.env);
          const password = await ctx.ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true);
          const api = await ctx.client();
          const r = await api.init({
            email: o.email,
            name: o.name,
            password,
            profile_name: o.profileName,
            bootstrap_token: token,
          });
          if (ctx.json) return ctx.print(r);
          io.out(
            `instance initialised: admin ${r.user.email} (${r.user.user_id}), profile ${r.profile.name} (${r.profile.profile_id})`,
          );
        },
      ),
    );

  admin
    .command('login')
    .description('log in: password, then the email code (or TOTP code); saves the session')
    .requiredOption('--email <email>')
    .option('--password <password>', 'or CUSTODIAN_ADMIN_PASSWORD, or prompt')
    .option('--code <code>', 'second-factor code (else prompt)')
    .option('--mailbox <dir>', 'development: read the email code from this mailbox folder')
    .action(
      ctx.run(async (o: { email: string; password?: string; code?: string; mailbox?: string }) => {
        const password = await ctx.ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true);
        // no way to get the code: refuse before the password is sent (no challenge, no code e-mail)
        const codeEnv = io.env.CUSTODIAN_ADMIN_CODE;
        if (o.code === undefined && o.mailbox === undefined && (codeEnv ?? '') === '' && !ctx.canPrompt())
          throw new AdminCliError(
            'a second-factor code is required and stdin is not a terminal: pass --code <code> or set CUSTODIAN_ADMIN_CODE ' +
              '(the authenticator code once TOTP is enrolled), or run the command on a terminal to type the e-mailed code',
          );
        const api = await ctx.client();
        const c = await api.login({ email: o.email, password });
        let code = o.code;
        if (code === undefined && o.mailbox !== undefined && c.method === 'email') {
          const mails = (await readMailbox(o.mailbox)).filter((m) =>
            m.to.toLowerCase().includes(o.email.toLowerCase()),
          );
          code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
          if (code === undefined) throw new AdminCliError(`no login code for ${o.email} in ${o.mailbox}`);
        }
        code ??= await ctx.ask(
          undefined,
          'CUSTODIAN_ADMIN_CODE',
          c.method === 'totp' ? 'Authenticator code: ' : 'Code from the email: ',
          false,
        );
        const v = await api.verifyLogin({ challenge_id: c.challenge_id, code });
        const file = ctx.sessionFile();
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(file, JSON.stringify({ url: api.baseUrl, token: v.token, expires_at: v.expires_at }), {
          mode: 0o600,
        });
        if (ctx.json) return ctx.print({ user: v.user, expires_at: v.expires_at, session_file: file });
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
      ctx.run(async (o: { password?: string; code?: string }) => {
        const api = await ctx.client();
        const me = await api.me();
        const body = me.totp_enabled
          ? { code: await ctx.ask(o.code, 'CUSTODIAN_ADMIN_CODE', 'Authenticator code: ', false) }
          : { password: await ctx.ask(o.password, 'CUSTODIAN_ADMIN_PASSWORD', 'Password: ', true) };
        const r = await api.stepUp(body);
        if (ctx.json) return ctx.print(r);
        io.out(`stepped up (${r.method}) until ${r.step_up_expires_at}`);
      }),
    );

  admin
    .command('logout')
    .description('revoke the session and forget it')
    .action(
      ctx.run(async () => {
        await (await ctx.client()).logout();
        await rm(ctx.sessionFile(), { force: true });
        ctx.print(undefined);
      }),
    );
  admin
    .command('whoami')
    .description('the logged-in user')
    .action(ctx.run(async () => ctx.print(await (await ctx.client()).me())));

  admin
    .command('password')
    .description('change your own password (other sessions are signed out; you get an e-mail notice)')
    .option('--current <password>', 'current password (or CUSTODIAN_ADMIN_PASSWORD, or prompt)')
    .option('--new <password>', 'new password, hard to guess (or CUSTODIAN_NEW_PASSWORD, or prompt)')
    .action(
      ctx.run(async (o: { current?: string; new?: string }) => {
        const current_password = await ctx.ask(o.current, 'CUSTODIAN_ADMIN_PASSWORD', 'Current password: ', true);
        const new_password = await ctx.ask(o.new, 'CUSTODIAN_NEW_PASSWORD', 'New password: ', true);
        await (await ctx.client()).changePassword({ current_password, new_password });
        if (ctx.json) return ctx.print({ changed: true });
        io.out('password changed; your other sessions were signed out');
      }),
    );

  const totp = admin.command('totp').description('authenticator app (TOTP) second factor');
  totp
    .command('enroll')
    .description('start enrollment: prints the secret and otpauth:// URI')
    .action(ctx.run(async () => ctx.print(await (await ctx.client()).enrollTotp())));
  totp
    .command('confirm <code>')
    .description('confirm enrollment with a current code (used up: log in with a later one)')
    .action(ctx.run(async (code: string) => ctx.print(await (await ctx.client()).confirmTotp(code))));
  totp
    .command('disable <code>')
    .description('disable TOTP (email codes again)')
    .action(ctx.run(async (code: string) => ctx.print(await (await ctx.client()).disableTotp(code))));
}
