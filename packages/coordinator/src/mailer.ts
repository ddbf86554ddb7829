/**
 * Outgoing mail (one-time login codes, notices) through nodemailer: SMTP (`mail.transport: "smtp"`,
 * docs/configuration.md), or the file mailbox — a local folder of RFC 5322 `.eml` files that
 * `custodian admin mailbox` reads (development default; in production only when configured
 * explicitly). A failed send rejects with {@link MailSendError}, whose message names the transport
 * failure (nodemailer's error code, SMTP reply code and command) and never the message, its
 * recipient's code or the SMTP credentials.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { CoordinatorError } from './errors.js';

/** One outgoing message (plain text). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail. */
export interface Mailer {
  send(msg: MailMessage): Promise<void>;
}

/**
 * How mail leaves the coordinator (config file key `mail`): `{ transport: 'smtp', url, from? }` —
 * `url` an SMTP URL, `smtp://user:pass@host:587` (STARTTLS required unless the host is loopback) or
 * `smtps://user:pass@host:465` (TLS); or `{ transport: 'file', from? }` — the mailbox folder
 * (`CoordinatorOptions.mailboxDir`, default `<dataDir>/mailbox`). `from`: the From header
 * (default `Custodian <no-reply@custodian.invalid>`).
 */
export type MailSettings =
  | { readonly transport: 'smtp'; readonly url: string; readonly from?: string }
  | { readonly transport: 'file'; readonly from?: string };

/** Default From header. */
export const DEFAULT_MAIL_FROM = 'Custodian <no-reply@custodian.invalid>';

/** Mailer settings: `smtpUrl` (e.g. `smtps://user:pass@host:465`) or `mailboxDir`. */
export interface MailerOptions {
  from: string;
  smtpUrl?: string;
  mailboxDir?: string;
}

/**
 * A message could not be handed to the mail transport (code `MAIL_SEND_FAILED`). The message is
 * safe to log: the transport's error code, SMTP reply code and command, never the mail's content
 * or the SMTP credentials. Login answers it with 503 `MAIL_UNAVAILABLE`.
 */
export class MailSendError extends CoordinatorError {
  constructor(readonly summary: string) {
    super('MAIL_SEND_FAILED', `mail not sent: ${summary}`);
  }
}

/** A log-safe summary of a nodemailer failure: error code, SMTP reply code, SMTP command. */
function failureSummary(e: unknown): string {
  const f = (e ?? {}) as { code?: unknown; responseCode?: unknown; command?: unknown };
  const parts = [
    typeof f.code === 'string' ? f.code : 'ERROR',
    typeof f.responseCode === 'number' ? `SMTP ${f.responseCode}` : undefined,
    typeof f.command === 'string' ? `at ${f.command.split(' ')[0]}` : undefined,
  ];
  return parts.filter((p) => p !== undefined).join(' ');
}

/**
 * The nodemailer SMTP transport options of `smtpUrl`: connection and greeting timeouts 10 s, socket
 * idle 30 s, and `requireTLS` for an `smtp://` URL unless its host is loopback (127.0.0.0/8, ::1,
 * `localhost`) — a server that does not offer STARTTLS (or a path that strips it) fails the send
 * instead of carrying the password and the login codes in plaintext. `smtps://` is TLS from the
 * first byte. The URL is not checked here (nodemailer reports a malformed one at send).
 */
export function smtpTransportOptions(smtpUrl: string): {
  url: string;
  requireTLS: boolean;
  connectionTimeout: number;
  greetingTimeout: number;
  socketTimeout: number;
} {
  let requireTLS = true;
  try {
    const u = new URL(smtpUrl);
    requireTLS = u.protocol === 'smtp:' && !isLoopbackHost(u.hostname);
  } catch {}
  return { url: smtpUrl, requireTLS, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };
}

/** Whether a URL host (brackets allowed) is `localhost`, in 127.0.0.0/8 or `::1`. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIPv4(h) && h.startsWith('127.');
}

/**
 * Create a mailer. With `smtpUrl`, messages go through SMTP ({@link smtpTransportOptions}: TLS
 * required off loopback; timeouts so a login never hangs on a dead server); otherwise each message is
 * rendered by nodemailer's stream transport and written to
 * `<mailboxDir>/<ms timestamp>-<pid>-<seq>.eml` (mode 0600).
 * `send` rejects with {@link MailSendError} when the transport fails.
 * @throws Error when neither is given
 */
export function createMailer(opts: MailerOptions): Mailer {
  if (opts.smtpUrl !== undefined) {
    const t = nodemailer.createTransport(smtpTransportOptions(opts.smtpUrl));
    return {
      async send(m) {
        try {
          await t.sendMail({ from: opts.from, to: m.to, subject: m.subject, text: m.text });
        } catch (e) {
          throw new MailSendError(failureSummary(e));
        }
      },
    };
  }
  const dir = opts.mailboxDir;
  if (dir === undefined) throw new Error('mailer: configure smtpUrl or mailboxDir');
  const t = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  let seq = 0;
  return {
    async send(m) {
      try {
        const info = await t.sendMail({ from: opts.from, to: m.to, subject: m.subject, text: m.text });
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const name = `${Date.now().toString().padStart(15, '0')}-${process.pid}-${(seq++).toString().padStart(6, '0')}.eml`;
        await writeFile(join(dir, name), info.message as Buffer, { mode: 0o600 });
      } catch (e) {
        throw new MailSendError(failureSummary(e));
      }
    },
  };
}

/** A message read back from a mailbox folder. */
export interface MailboxEntry {
  file: string;
  to: string;
  subject: string;
  /** The decoded plain-text body. */
  text: string;
}

/**
 * Read the messages of a development mailbox folder, oldest first (empty when the folder does
 * not exist). Headers are parsed minimally (To, Subject); bodies are plain text as written by
 * {@link createMailer} (quoted-printable is decoded).
 */
export async function readMailbox(dir: string): Promise<MailboxEntry[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.eml')).sort();
  } catch {
    return [];
  }
  const out: MailboxEntry[] = [];
  for (const file of files) {
    const raw = await readFile(join(dir, file), 'utf8');
    const split = raw.indexOf('\n\n');
    const head = raw.slice(0, split).replace(/\n[ \t]+/g, ' ');
    let body = raw.slice(split + 2);
    const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
    if (/quoted-printable/i.test(header('Content-Transfer-Encoding'))) {
      body = body
        .replace(/=\n/g, '')
        .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
    }
    out.push({ file, to: header('To'), subject: header('Subject'), text: body.trim() });
  }
  return out;
}
