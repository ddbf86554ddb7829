#!/usr/bin/env node
/**
 * smtp-sink: a real SMTP server on loopback that stores every message it accepts, for tests and
 * the operator walkthrough (the coordinator's login codes go to it over SMTP).
 *
 * Usage:   node scripts/smtp-sink.mjs --dir DIR [--port N]
 *
 *   --dir DIR   folder for the messages (created, mode 0700); each accepted message is written as
 *               `DIR/<ms timestamp>-<seq>.eml` (the raw RFC 5322 message, mode 0600), atomically
 *               (a temporary name, then rename), so a reader never sees half a message.
 *   --port N    TCP port on 127.0.0.1 (default 0: any free port).
 *
 * Prints exactly one line when ready:   smtp-sink listening on 127.0.0.1:PORT
 * Accepts any sender, recipient and AUTH PLAIN/LOGIN credentials (they are not checked and never
 * printed); no TLS (loopback only). Stops on SIGTERM or SIGINT (exit 0).
 * Read a message with mailparser: `simpleParser(await readFile(file))` → `.text`, `.to`, `.subject`.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SMTPServer } from 'smtp-server';

const { values } = parseArgs({ options: { dir: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (values.dir === undefined) {
  process.stderr.write('usage: node scripts/smtp-sink.mjs --dir DIR [--port N]\n');
  process.exit(2);
}
const dir = values.dir;
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write('smtp-sink: --port must be an integer in [0, 65535]\n');
  process.exit(2);
}
await mkdir(dir, { recursive: true, mode: 0o700 });

let seq = 0;
const server = new SMTPServer({
  secure: false,
  disabledCommands: ['STARTTLS'],
  authOptional: true,
  onAuth(_auth, _session, cb) {
    cb(null, { user: 'sink' });
  },
  onData(stream, _session, cb) {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('error', cb);
    stream.on('end', async () => {
      try {
        const name = `${Date.now().toString().padStart(15, '0')}-${(seq++).toString().padStart(6, '0')}.eml`;
        const tmp = join(dir, `.${name}.tmp`);
        await writeFile(tmp, Buffer.concat(chunks), { mode: 0o600 });
        await rename(tmp, join(dir, name));
        cb();
      } catch (e) {
        cb(e instanceof Error ? e : new Error(String(e)));
      }
    });
  },
});
server.on('error', (e) => process.stderr.write(`smtp-sink: ${e.message}\n`));
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`smtp-sink listening on 127.0.0.1:${server.server.address().port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref(); // open connections do not hold the exit
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
