/**
 * `custodian admin policies …` and `custodian admin transfers …`.
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
import type { PolicyInput } from '@custodian/coordinator/admin-api-types';
import { signPolicy } from '@custodian/wire';
import { type AdminContext, type PageFlags, pageOpts, pageQuery } from './context.js';

/**
 * Read a raw P-256 secret key file (64 hex digits).
 * @throws Error naming the file when the content is not 32 bytes of hex (the key is never echoed)
 */
export async function readDeviceKeyFile(path: string): Promise<Uint8Array> {
  const text = (await readFile(path, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error(`${path}: expected a P-256 secret key as 64 hex digits`);
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

/** Register `policies` and `transfers` on `admin`. */
export function registerPolicyCommands(ctx: AdminContext): void {
  const body = async (file: string): Promise<PolicyInput> => {
    try {
      return JSON.parse(await readFile(file, 'utf8'));
    } catch (e) {
      return ctx.fail(`${file}: ${(e as Error).message}`);
    }
  };

  const pol = ctx.admin
    .command('policies')
    .description('transfer policies: whitelist, limits, approval quorum (signed by an Admin device)');
  pageOpts(pol.command('list <profile_id>').description('policies of a profile')).action(
    ctx.run(async (p: string, o: PageFlags) =>
      ctx.print(await (await ctx.client()).listPolicies(p, pageQuery(o)), [
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
    .action(ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).getPolicy(p, id))));
  pol
    .command('create <profile_id>')
    .description('create a policy (version 1 takes effect once signed: `policies sign`)')
    .requiredOption(
      '--file <policy.json>',
      'JSON: { name, scope: { wallet_ids, blockchain, asset_id }, whitelist, per_transaction_limit, daily_limit, approvals: { quorum, above_amount } } — amounts in base units',
    )
    .action(
      ctx.run(async (p: string, o: { file: string }) => {
        const api = await ctx.client();
        ctx.print(await api.createPolicy(p, await body(o.file)));
      }),
    );
  pol
    .command('update <profile_id> <policy_id>')
    .description('new version of a policy (in force once signed)')
    .requiredOption('--file <policy.json>', 'JSON as for create')
    .action(
      ctx.run(async (p: string, id: string, o: { file: string }) => {
        const api = await ctx.client();
        ctx.print(await api.updatePolicy(p, id, await body(o.file)));
      }),
    );
  pol
    .command('delete <profile_id> <policy_id>')
    .action(ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).deletePolicy(p, id))));
  pol
    .command('sign <profile_id> <policy_id>')
    .description("sign a policy version with the Admin's enrolled device key (it becomes ACTIVE)")
    .requiredOption('--device-id <device_id>', 'the enrolled (APPROVED) device')
    .requiredOption('--device-key <file>', 'raw P-256 secret key of the device, 64 hex digits')
    .option('--version <n>', 'version to sign (default: the one awaiting a signature)')
    .action(
      ctx.run(async (p: string, id: string, o: { deviceId: string; deviceKey: string; version?: string }) => {
        const api = await ctx.client();
        const policy = await api.getPolicy(p, id);
        const v =
          o.version !== undefined
            ? policy.versions.find((x) => x.version === Number(o.version))
            : policy.versions.find((x) => x.status === 'PENDING_SIGNATURE');
        if (v === undefined) return ctx.fail('no such version awaiting a signature');
        let sk: Uint8Array;
        try {
          sk = await readDeviceKeyFile(o.deviceKey);
        } catch (e) {
          return ctx.fail((e as Error).message);
        }
        const signed = signPolicy(v.document, o.deviceId, sk);
        sk.fill(0);
        ctx.print(
          await api.signPolicyVersion(p, id, v.version, { device_id: o.deviceId, signature: signed.signature }),
        );
      }),
    );

  const tr = ctx.admin.command('transfers').description('transfers: list, cancel a pending one, fee bump a stuck one');
  pageOpts(
    tr
      .command('list <profile_id>')
      .option('--wallet <wallet_id>', 'only this wallet')
      .option('--status <status>', 'only this status'),
  ).action(
    ctx.run(async (p: string, o: PageFlags & { wallet?: string; status?: string }) =>
      ctx.print(
        await (await ctx.client()).listTransfers(p, { wallet_id: o.wallet, status: o.status, ...pageQuery(o) }),
        ['transfer_id', 'status', 'sub_status', 'amount', 'destination_address', 'tx_hash', 'created_at'],
      ),
    ),
  );
  tr.command('show <profile_id> <transfer_id>').action(
    ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).getTransfer(p, id))),
  );
  tr.command('cancel <profile_id> <transfer_id>')
    .description('cancel a pending transfer (ADMIN, FINANCE_MANAGER)')
    .action(ctx.run(async (p: string, id: string) => ctx.print(await (await ctx.client()).cancelTransfer(p, id))));
  tr.command('fee-bump <profile_id> <transfer_id>')
    .description('replace a stuck SENT transaction with a higher fee (needs new device approvals)')
    .option('--priority <level>', 'SLOW, STANDARD or FAST', 'FAST')
    .option('--method <method>', 'RBF (replace) or CPFP (Bitcoin family: a child spending the change output)', 'RBF')
    .action(
      ctx.run(async (p: string, id: string, o: { priority: string; method: string }) => {
        const method = o.method.toUpperCase();
        if (method !== 'RBF' && method !== 'CPFP') ctx.fail('--method: RBF or CPFP');
        ctx.print(await (await ctx.client()).feeBumpTransfer(p, id, o.priority, method));
      }),
    );
}
