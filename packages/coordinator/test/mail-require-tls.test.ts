/**
 * SMTP downgrade (#29 review): an `smtp://` URL must not fall back to plaintext when a server (or
 * someone in the path) does not offer STARTTLS — the mailer requires TLS for every `smtp://` host
 * except loopback (127.0.0.0/8, ::1, localhost), where the local test sink runs without TLS.
 * Real smtp-server instances without STARTTLS: on loopback the message is accepted; on this
 * machine's non-loopback address the send is refused before any message reaches the server.
 */

import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { createMailer, MailSendError, smtpTransportOptions } from '../src/mailer.js';

const servers: SMTPServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

/** A plaintext-only SMTP server on `host` (no STARTTLS); counts accepted messages. */
async function plainServer(host: string): Promise<{ port: number; received: () => number }> {
  let n = 0;
  const s = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onData(stream, _session, cb) {
      stream.resume();
      stream.on('end', () => {
        n++;
        cb();
      });
    },
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, host, r));
  return { port: (s.server.address() as AddressInfo).port, received: () => n };
}

/** A non-loopback IPv4 address of this machine, if it has one. */
function localNonLoopback(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

const msg = { to: 'a@example.com', subject: 's', text: 't' };

describe('SMTP requires TLS except on loopback', () => {
  it('the transport options require TLS for smtp:// to a non-loopback host, not for loopback', () => {
    for (const url of ['smtp://mail.example.com:587', 'smtp://u:p@10.0.0.5:25', 'smtp://[2001:db8::1]:587']) {
      expect(smtpTransportOptions(url).requireTLS, url).toBe(true);
    }
    for (const url of ['smtp://127.0.0.1:2525', 'smtp://127.3.4.5:25', 'smtp://[::1]:25', 'smtp://localhost:25']) {
      expect(smtpTransportOptions(url).requireTLS, url).toBe(false);
    }
  });

  it('a plaintext-only SMTP server on loopback accepts the message', async () => {
    const s = await plainServer('127.0.0.1');
    await createMailer({ smtpUrl: `smtp://127.0.0.1:${s.port}`, from: 'x@example.com' }).send(msg);
    expect(s.received()).toBe(1);
  });

  it('a plaintext-only SMTP server on a non-loopback address is refused (no downgrade)', async (ctx) => {
    const ip = localNonLoopback();
    if (ip === undefined) return ctx.skip();
    const s = await plainServer(ip);
    const send = createMailer({ smtpUrl: `smtp://${ip}:${s.port}`, from: 'x@example.com' }).send(msg);
    await expect(send).rejects.toBeInstanceOf(MailSendError);
    expect(s.received()).toBe(0);
  });
});
