/**
 * Issue #24: `custodian dev` prints each new login code of the development mailbox
 * (`printLoginCodes`), so a dashboard user can log in from the terminal — the code line only, never
 * the rest of the mail, and never the mails that were already there. Fast: a temp mailbox folder of
 * `.eml` files as the coordinator's mailer writes them, a fake interval clock and a collecting
 * output stream; no dev stack.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { printLoginCodes } from '../src/dev.js';

let mailbox = '';
let seq = 0;
const stops: (() => void)[] = [];

beforeEach(async () => {
  mailbox = await mkdtemp(join(tmpdir(), 'custodian-mailbox-'));
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
});

afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  vi.useRealTimers();
  await rm(mailbox, { recursive: true, force: true });
});

/** Write one mail as the development mailer does (`<ms timestamp>-<pid>-<seq>.eml`, headers, blank line, body). */
async function deliver(to: string, subject: string, text: string): Promise<void> {
  const name = `${Date.now().toString().padStart(15, '0')}-${process.pid}-${(seq++).toString().padStart(6, '0')}.eml`;
  const mail = [
    'Content-Type: text/plain; charset=utf-8',
    'From: Custodian <no-reply@custodian.local>',
    `To: ${to}`,
    `Subject: ${subject}`,
    'Content-Transfer-Encoding: 7bit',
    'MIME-Version: 1.0',
    '',
    text,
  ].join('\n');
  await writeFile(join(mailbox, name), mail, { mode: 0o600 });
}

const loginMail = (code: string) =>
  `Your Custodian login code is ${code}\n\nIt expires in 10 minutes. If you did not try to log in, change your password.\n`;

/** Let the fake clock tick (one poll a second) until `check` passes. */
async function pollUntil(check: () => void): Promise<void> {
  await vi.waitFor(() => {
    vi.advanceTimersByTime(1000);
    check();
  });
}

/** Start the printer on the temp mailbox; its output lines. */
function watch(): string[] {
  const lines: string[] = [];
  stops.push(printLoginCodes(mailbox, (l) => lines.push(l), 1000));
  return lines;
}

it('prints exactly the code line of a new login mail, and not the mails that were already there', async () => {
  await deliver('old@example.com', 'Your Custodian login code', loginMail('111111'));
  const lines = watch();

  vi.advanceTimersByTime(1000);
  await deliver('finance@example.com', 'Your Custodian login code', loginMail('482913'));
  await pollUntil(() => expect(lines.length).toBeGreaterThan(0));
  expect(lines).toEqual(['login code for finance@example.com: 482913 (development mailbox)']);
  // nothing else of the mail: no body, no subject, no headers
  expect(lines.join('\n')).not.toMatch(/expires|password|Subject|no-reply|111111/);
});

it('prints each new code once, skips mails that carry no login code, and stops polling when stopped', async () => {
  const lines = watch();
  await deliver('admin@custodian.local', 'Your Custodian login code', loginMail('000123'));
  await pollUntil(() => expect(lines).toHaveLength(1));

  await deliver('admin@custodian.local', 'Transfer approved', 'Transfer 42 was approved by 2 of 3 approvers.\n');
  await deliver('viewer@example.com', 'Your Custodian login code', loginMail('987654'));
  await pollUntil(() => expect(lines).toHaveLength(2));
  // more polls of the same mails print nothing again; one poll runs at a time, so once a later
  // mail's code is out, every earlier poll is done
  vi.advanceTimersByTime(3000);
  await deliver('viewer@example.com', 'Your Custodian login code', loginMail('135790'));
  await pollUntil(() => expect(lines).toHaveLength(3));
  vi.advanceTimersByTime(1000);
  await deliver('viewer@example.com', 'Your Custodian login code', loginMail('555555'));
  await pollUntil(() => expect(lines).toHaveLength(4));
  expect(lines).toEqual([
    'login code for admin@custodian.local: 000123 (development mailbox)',
    'login code for viewer@example.com: 987654 (development mailbox)',
    'login code for viewer@example.com: 135790 (development mailbox)',
    'login code for viewer@example.com: 555555 (development mailbox)',
  ]);

  (stops.pop() as () => void)();
  expect(vi.getTimerCount()).toBe(0);
});

it('starts on a mailbox folder that does not exist yet (no mail sent so far)', async () => {
  await rm(mailbox, { recursive: true, force: true });
  const lines = watch();
  vi.advanceTimersByTime(1000);
  await mkdir(mailbox, { mode: 0o700 });
  await deliver('admin@custodian.local', 'Your Custodian login code', loginMail('246810'));
  await pollUntil(() => expect(lines).toEqual(['login code for admin@custodian.local: 246810 (development mailbox)']));
});
