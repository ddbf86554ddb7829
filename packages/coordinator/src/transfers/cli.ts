/**
 * `custodian admin policies …` and `custodian admin transfers …` (registered from cli.ts).
 *
 * Signing a policy version (`policies sign`) happens on the operator's machine: the CLI fetches
 * the version's document, signs `policyDigest(document)` with the Admin's enrolled device key
 * (`signPolicy` of @custodian/wire: P-256, r‖s) and sends only the signature. `--device-key` is a
 * file holding the device's raw P-256 secret key as 64 hex digits (optionally followed by a
 * newline). The mobile simulator keeps its key sealed under the PIN in `<data>/device.json`
 * (packages/mobile vault.ts): sign on the device instead with `custodian mobile sign-policy`, which
 * shows the policy, asks for the PIN and posts the signature (the key never leaves the vault).
 */
import { readFile } from 'node:fs/promises';
import { signPolicy } from '@custodian/wire';
import type { Command } from 'commander';

/** The helpers of `registerAdminCommands` the commands use. */
export interface TransferCliContext {
  // biome-ignore lint/suspicious/noExplicitAny: admin API responses are JSON whose fields the commands read
  call(method: string, path: string, body?: unknown): Promise<any>;
  print(data: unknown, columns?: string[]): void;
  run<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): (...args: A) => Promise<void>;
  q(params: Record<string, string | number | undefined>): string;
  pageOpts(c: Command): Command;
  fail(message: string): never;
}

const E = encodeURIComponent;

/**
 * Read a raw P-256 secret key file (64 hex digits).
 * @throws Error naming the file when the content is not 32 bytes of hex (the key is never echoed)
 */
export async function readDeviceKeyFile(path: string): Promise<Uint8Array> {
  const text = (await readFile(path, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error(`${path}: expected a P-256 secret key as 64 hex digits`);
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

/** Register the commands on the `admin` command. */
export function registerTransferCommands(admin: Command, c: TransferCliContext): void {
  const base = (p: string) => `/admin/v1/profiles/${E(p)}`;
  const body = async (file: string) => {
    try {
      return JSON.parse(await readFile(file, 'utf8'));
    } catch (e) {
      return c.fail(`${file}: ${(e as Error).message}`);
    }
  };

  const pol = admin
    .command('policies')
    .description('transfer policies: whitelist, limits, approval quorum (signed by an Admin device)');
  c.pageOpts(pol.command('list <profile_id>').description('policies of a profile')).action(
    c.run(async (p: string, o: { page: string; pageSize: string }) =>
      c.print(await c.call('GET', `${base(p)}/policies${c.q({ page: o.page, page_size: o.pageSize })}`), [
        'policy_id',
        'name',
        'active_version',
        'created_at',
      ]),
    ),
  );
  pol
    .command('show <profile_id> <policy_id>')
    .description('a policy with its versions')
    .action(c.run(async (p: string, id: string) => c.print(await c.call('GET', `${base(p)}/policies/${E(id)}`))));
  pol
    .command('create <profile_id>')
    .description('create a policy (version 1 takes effect once signed: `policies sign`)')
    .requiredOption(
      '--file <policy.json>',
      'JSON: { name, scope: { wallet_ids, blockchain, asset_id }, whitelist, per_transaction_limit, daily_limit, approvals: { quorum, above_amount } } — amounts in base units',
    )
    .action(
      c.run(async (p: string, o: { file: string }) =>
        c.print(await c.call('POST', `${base(p)}/policies`, await body(o.file))),
      ),
    );
  pol
    .command('update <profile_id> <policy_id>')
    .description('new version of a policy (in force once signed)')
    .requiredOption('--file <policy.json>', 'JSON as for create')
    .action(
      c.run(async (p: string, id: string, o: { file: string }) =>
        c.print(await c.call('PUT', `${base(p)}/policies/${E(id)}`, await body(o.file))),
      ),
    );
  pol
    .command('delete <profile_id> <policy_id>')
    .action(c.run(async (p: string, id: string) => c.print(await c.call('DELETE', `${base(p)}/policies/${E(id)}`))));
  pol
    .command('sign <profile_id> <policy_id>')
    .description("sign a policy version with the Admin's enrolled device key (it becomes ACTIVE)")
    .requiredOption('--device-id <device_id>', 'the enrolled (APPROVED) device')
    .requiredOption('--device-key <file>', 'raw P-256 secret key of the device, 64 hex digits')
    .option('--version <n>', 'version to sign (default: the one awaiting a signature)')
    .action(
      c.run(async (p: string, id: string, o: { deviceId: string; deviceKey: string; version?: string }) => {
        const policy = await c.call('GET', `${base(p)}/policies/${E(id)}`);
        const versions = policy.versions as { version: number; status: string; document: never; digest: string }[];
        const v =
          o.version !== undefined
            ? versions.find((x) => x.version === Number(o.version))
            : versions.find((x) => x.status === 'PENDING_SIGNATURE');
        if (v === undefined) return c.fail('no such version awaiting a signature');
        let sk: Uint8Array;
        try {
          sk = await readDeviceKeyFile(o.deviceKey);
        } catch (e) {
          return c.fail((e as Error).message);
        }
        const signed = signPolicy(v.document, o.deviceId, sk);
        sk.fill(0);
        c.print(
          await c.call('POST', `${base(p)}/policies/${E(id)}/versions/${v.version}/signature`, {
            device_id: o.deviceId,
            signature: signed.signature,
          }),
        );
      }),
    );

  const tr = admin.command('transfers').description('transfers: list, cancel a pending one, fee bump a stuck one');
  c.pageOpts(
    tr
      .command('list <profile_id>')
      .option('--wallet <wallet_id>', 'only this wallet')
      .option('--status <status>', 'only this status'),
  ).action(
    c.run(async (p: string, o: { wallet?: string; status?: string; page: string; pageSize: string }) =>
      c.print(
        await c.call(
          'GET',
          `${base(p)}/transfers${c.q({ wallet_id: o.wallet, status: o.status, page: o.page, page_size: o.pageSize })}`,
        ),
        ['transfer_id', 'status', 'sub_status', 'amount', 'destination_address', 'tx_hash', 'created_at'],
      ),
    ),
  );
  tr.command('show <profile_id> <transfer_id>').action(
    c.run(async (p: string, id: string) => c.print(await c.call('GET', `${base(p)}/transfers/${E(id)}`))),
  );
  tr.command('cancel <profile_id> <transfer_id>')
    .description('cancel a pending transfer (ADMIN, FINANCE_MANAGER)')
    .action(
      c.run(async (p: string, id: string) => c.print(await c.call('POST', `${base(p)}/transfers/${E(id)}/cancel`))),
    );
  tr.command('fee-bump <profile_id> <transfer_id>')
    .description('replace a stuck SENT transaction with a higher fee (needs new device approvals)')
    .option('--priority <level>', 'SLOW, STANDARD or FAST', 'FAST')
    .action(
      c.run(async (p: string, id: string, o: { priority: string }) =>
        c.print(await c.call('POST', `${base(p)}/transfers/${E(id)}/fee-bump`, { priority: o.priority })),
      ),
    );
}
