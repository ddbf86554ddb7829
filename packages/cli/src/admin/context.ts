/**
 * What every `custodian admin` command shares: where it writes (`CliIo`), the global options
 * (`--coordinator-url`, `--token`, `--session-file`, `--json`), the saved session, the typed API
 * client built from them, table/JSON output, the error wrapper (exit code 1) and prompts.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { AdminClient } from './client.js';
import { AdminCliError } from './http.js';

/** Where the CLI writes and reads (injectable for tests). */
export interface CliIo {
  out(s: string): void;
  err(s: string): void;
  env: Record<string, string | undefined>;
  /** Ask a question on the terminal; `secret` hides the answer. */
  prompt?(question: string, secret: boolean): Promise<string>;
  /** Whether {@link prompt} can ask anyone now (stdin is a terminal); absent: whenever `prompt` is set. */
  interactive?(): boolean;
}

/** The process's stdout, stderr, environment and terminal. */
export const defaultIo: CliIo = {
  out: (s) => process.stdout.write(`${s}\n`),
  err: (s) => process.stderr.write(`${s}\n`),
  env: process.env,
  interactive: () => process.stdin.isTTY === true,
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

/** The `admin` command's own options. */
export interface GlobalOpts {
  coordinatorUrl?: string;
  token?: string;
  json?: boolean;
  sessionFile?: string;
}

/** The saved login: `{ url, token, expires_at }` in a 0600 file. */
export interface SavedSession {
  url?: string;
  token?: string;
  expires_at?: string;
}

/** Render rows as an aligned text table (columns from the first row's keys, objects as JSON). */
export function formatTable(rows: readonly object[], columns?: string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? Object.keys(rows[0]!);
  const get = (r: object, c: string) => (r as Record<string, unknown>)[c];
  const cell = (v: unknown) =>
    v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(get(r, c)).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(cols.map((c) => c.toUpperCase())),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(get(r, c))))),
  ].join('\n');
}

/** Split `--events A,B C` into event types. */
export const eventTypes = (events: string[]): string[] => events.flatMap((e) => e.split(',')).filter(Boolean);

/** The helpers the command files receive from `registerAdminCommands`. */
export class AdminContext {
  constructor(
    readonly admin: Command,
    readonly io: CliIo,
  ) {}

  /** The global options as parsed. */
  opts(): GlobalOpts {
    return this.admin.opts<GlobalOpts>();
  }

  /** Whether `--json` was given. */
  get json(): boolean {
    return this.opts().json === true;
  }

  /** Where `admin login` saves the session: `--session-file`, else `$XDG_CONFIG_HOME/custodian/admin-session.json`. */
  sessionFile(): string {
    const o = this.opts();
    if (o.sessionFile) return o.sessionFile;
    const base = this.io.env.XDG_CONFIG_HOME ?? join(this.io.env.HOME ?? homedir(), '.config');
    return join(base, 'custodian', 'admin-session.json');
  }

  /**
   * Coordinator URL and token: flags (or CUSTODIAN_URL / CUSTODIAN_ADMIN_TOKEN), else the saved
   * session (its token only for its own URL), else http://127.0.0.1:8080 without a token.
   */
  async session(): Promise<{ url: string; token?: string }> {
    const o = this.opts();
    let saved: SavedSession = {};
    try {
      saved = JSON.parse(await readFile(this.sessionFile(), 'utf8'));
    } catch {}
    const env = this.io.env;
    const url = (o.coordinatorUrl ?? saved.url ?? env.CUSTODIAN_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    const token =
      o.token ??
      env.CUSTODIAN_ADMIN_TOKEN ??
      (o.coordinatorUrl === undefined || o.coordinatorUrl === saved.url ? saved.token : undefined);
    return token === undefined ? { url } : { url, token };
  }

  /** The typed admin API client for this invocation's session. */
  async client(): Promise<AdminClient> {
    const s = await this.session();
    return new AdminClient(s.token === undefined ? { baseUrl: s.url } : { baseUrl: s.url, token: s.token });
  }

  /**
   * Print an answer: JSON with `--json`; `ok` for none; a table for a list or a page (with a
   * `page x of y (n total)` line); a field/value table for an object.
   */
  print(data: unknown, columns?: string[]): void {
    const io = this.io;
    if (this.json || data === undefined) {
      io.out(this.json ? JSON.stringify(data ?? null, null, 2) : 'ok');
      return;
    }
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
      io.out(formatTable(entries));
    } else io.out(String(data));
  }

  /**
   * Wrap an action: an {@link AdminCliError} becomes `error: <message>` on stderr (with `--json`
   * and a problem: the problem as JSON) and exit code 1; other errors propagate.
   */
  run<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): (...args: A) => Promise<void> {
    return async (...args: A) => {
      try {
        await fn(...args);
      } catch (e) {
        if (e instanceof AdminCliError) {
          if (this.json && e.problem !== undefined) this.io.err(JSON.stringify(e.problem));
          else this.io.err(`error: ${e.message}`);
          process.exitCode = 1;
          return;
        }
        throw e;
      }
    };
  }

  /** Stop the command with `error: <message>` and exit code 1. */
  fail(message: string): never {
    throw new AdminCliError(message);
  }

  /**
   * A value from its flag, else the environment variable, else a prompt.
   * @throws AdminCliError `<question> is required (or set ENV)` when there is no terminal to ask on
   */
  async ask(value: string | undefined, envName: string, question: string, secret: boolean): Promise<string> {
    const v = value ?? this.io.env[envName];
    if (v !== undefined && v !== '') return v;
    if (this.io.prompt === undefined || !this.canPrompt())
      throw new AdminCliError(`${question.replace(/: $/, '')} is required (or set ${envName})`);
    return this.io.prompt(question, secret);
  }

  /** Whether a missing value can be asked for on a terminal (stdin is one). */
  canPrompt(): boolean {
    return this.io.prompt !== undefined && (this.io.interactive?.() ?? true);
  }
}

/** Add `--page` and `--page-size` to a list command. */
export const pageOpts = (c: Command): Command =>
  c.option('--page <n>', 'page number', '1').option('--page-size <n>', 'items per page (max 200)', '50');

/** The options `pageOpts` adds, as commander parses them. */
export interface PageFlags {
  page: string;
  pageSize: string;
}

/** `PageFlags` as the API's query. */
export const pageQuery = (o: PageFlags) => ({ page: o.page, page_size: o.pageSize });
