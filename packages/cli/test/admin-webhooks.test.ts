/**
 * `custodian admin webhooks …`, `wallet-groups …` and `address-groups …` against a real
 * coordinator (PGlite, webhook worker off): signing-key rotation, notifications, redelivery and
 * groups (moved from packages/coordinator/test/webhooks-events.test.ts with the admin CLI).
 */

import { join } from 'node:path';
import { blockchainId } from '@custodian/coordinator';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from '../../coordinator/test/helpers.js';
import { type CliIo, registerAdminCommands } from '../src/admin/index.js';

const ETH = blockchainId('ethereum-sepolia');

describe('custodian admin CLI: webhooks and groups', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ coordinator: { webhooks: { runWorker: false } } });
  });
  afterAll(async () => h?.close());

  async function cli(...args: string[]) {
    const out: string[] = [];
    const io: CliIo = { out: (s) => out.push(s), err: (s) => out.push(s), env: { HOME: h.dir } };
    const program = new Command('custodian').exitOverride();
    registerAdminCommands(program, io);
    process.exitCode = 0;
    await program.parseAsync([
      'node',
      'custodian',
      'admin',
      '--coordinator-url',
      h.url,
      '--session-file',
      join(h.dir, 's.json'),
      ...args,
    ]);
    const code = Number(process.exitCode ?? 0);
    process.exitCode = 0;
    return { out: out.join('\n'), code };
  }

  it('rotate-key, keys, notifications, redeliver (409 unless FAILED), wallet groups and address groups', async () => {
    expect(
      (await cli('login', '--email', ADMIN_EMAIL, '--password', ADMIN_PASSWORD, '--mailbox', h.c.mailboxDir!)).code,
    ).toBe(0);
    // webhook changes need a step-up (#26 item 5)
    expect((await cli('step-up', '--password', ADMIN_PASSWORD)).code).toBe(0);
    const rot = await cli('--json', 'webhooks', 'rotate-key', '--lead-seconds', '60');
    expect(rot.code).toBe(0);
    const kid = JSON.parse(rot.out).kid;
    const keys = JSON.parse((await cli('--json', 'webhooks', 'keys')).out);
    expect(keys.map((k: Json) => [k.kid, k.state])).toContainEqual([kid, 'PUBLISHED']);
    const wh = JSON.parse(
      (
        await cli(
          '--json',
          'webhooks',
          'create',
          h.profileId,
          '--url',
          'https://127.0.0.1:9/x',
          '--events',
          'WALLET_GROUP_CREATED',
        )
      ).out,
    );
    const g = JSON.parse((await cli('--json', 'wallet-groups', 'create', h.profileId, '--name', 'Ops')).out);
    expect(g.name).toBe('Ops');
    const ag = JSON.parse(
      (await cli('--json', 'address-groups', 'create', h.profileId, '--name', 'Book', '--entry', `${ETH}:0xabc:cold`))
        .out,
    );
    expect(ag.entries).toEqual([{ blockchain_id: ETH, address: '0xabc', label: 'cold' }]);
    const list = JSON.parse((await cli('--json', 'webhooks', 'notifications', h.profileId, wh.webhook_id)).out);
    expect(list.total).toBe(1);
    const n = list.data[0];
    const red = await cli('webhooks', 'redeliver', h.profileId, wh.webhook_id, n.notification_id);
    expect(red.code).not.toBe(0);
    expect(red.out).toMatch(/CONFLICT|FAILED/);
  });
});
