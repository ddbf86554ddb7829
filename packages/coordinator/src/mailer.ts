/**
 * Outgoing mail (one-time login codes) through nodemailer: SMTP in production, or — in
 * development — a local mailbox folder of RFC 5322 `.eml` files that `custodian admin mailbox`
 * reads.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';

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

/** Mailer settings: `smtpUrl` (e.g. `smtps://user:pass@host:465`) or `mailboxDir`. */
export interface MailerOptions {
  from: string;
  smtpUrl?: string;
  mailboxDir?: string;
}

/**
 * Create a mailer. With `smtpUrl`, messages go through SMTP; otherwise each message is rendered
 * by nodemailer's stream transport and written to `<mailboxDir>/<ms timestamp>-<id>.eml`.
 * @throws Error when neither is given
 */
export function createMailer(opts: MailerOptions): Mailer {
  if (opts.smtpUrl !== undefined) {
    const t = nodemailer.createTransport(opts.smtpUrl);
    return {
      async send(m) {
        await t.sendMail({ from: opts.from, to: m.to, subject: m.subject, text: m.text });
      },
    };
  }
  const dir = opts.mailboxDir;
  if (dir === undefined) throw new Error('mailer: configure smtpUrl or mailboxDir');
  const t = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  let seq = 0;
  return {
    async send(m) {
      const info = await t.sendMail({ from: opts.from, to: m.to, subject: m.subject, text: m.text });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const name = `${Date.now().toString().padStart(15, '0')}-${process.pid}-${(seq++).toString().padStart(6, '0')}.eml`;
      await writeFile(join(dir, name), info.message as Buffer, { mode: 0o600 });
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
