/**
 * `custodian admin keys …`: the key lifecycle of a master key (issue #22) — `refresh` (same
 * parties, new shares), `replace-signer OLD NEW` and `reshare --threshold t' --signers …` (a new
 * party set; an Admin device signs the change), `changes` (the key changes and their state) and
 * `drill` (test signatures by the live signers, verified by the coordinator, and each party's
 * backup state). Admin only; each operation is a ceremony with the 5-minute timeout, followed with
 * `--wait` as `master-keys create --wait` is. Starting or preparing one (refresh, replace-signer,
 * reshare, drill) needs a fresh step-up of the session, as `signers add|remove` do: run
 * `custodian admin step-up` first; without it the coordinator answers 403 STEP_UP_REQUIRED, which
 * the CLI prints with that hint, and nothing starts.
 *
 * Signing a key change happens on the operator's machine: the CLI creates the change, shows its
 * document (old → new party set, threshold, approver devices, the unchanged public keys) and the
 * coordinator's digest, computes `keyChangeDigest(document)` itself (@custodian/wire
 * key-change.ts: SHA-256 over the canonical encoding, 32 bytes) and refuses — code
 * `KEY_CHANGE_DIGEST_MISMATCH` — when it differs from the coordinator's `digest`, or — code
 * `KEY_CHANGE_MISMATCH` — when the document is not the change asked for (threshold, parties,
 * approver devices, public keys of the master key; keys-check.ts). Only then does it sign with the
 * Admin device's P-256 key (`--device-key`, 64 hex digits, as `policies sign`) and send the
 * signature (r‖s, 64 bytes hex). The signers check the same signature against their own
 * `trustedAdminDevices` before dealing.
 *
 * A party is written `server:<signer_id>` or `device:<device_id>` (or `server:<name>`); a bare
 * value is looked up among the server signers' and devices' ids, then names, and refused when it
 * names none or more than one (`UNKNOWN_PARTY`, `AMBIGUOUS_PARTY`).
 */

import type {
  Device,
  DrillResult,
  KeyCeremony,
  KeyChange,
  KeyChangeInput,
  MasterKey,
  ServerSigner,
} from '@custodian/coordinator/admin-api-types';
import { signKeyChange } from '@custodian/wire';
import type { AdminClient } from './client.js';
import { type AdminContext, formatTable, type PageFlags, pageOpts, pageQuery } from './context.js';
import { checkKeyChange, describeKeyChange, drillPassed, refuse, resolveParty } from './keys-check.js';
import { readDeviceKeyFile } from './policies.js';

/** How often `--wait` asks for the ceremony / key change: 1 s. */
const POLL_MS = 1000;

/**
 * Poll a ceremony every second until it leaves RUNNING, printing each new progress line
 * (`<phase> <ready>/<total>[ — message]`) unless `--json`.
 */
async function waitCeremony(ctx: AdminContext, api: AdminClient, c: KeyCeremony): Promise<KeyCeremony> {
  let last = '';
  while (c.status === 'RUNNING') {
    const p = c.progress;
    const line = `${c.kind} ${p.phase} ${p.parties_ready}/${p.parties_total}${p.message ? ` — ${p.message}` : ''}`;
    if (line !== last && !ctx.json) ctx.io.out(line);
    last = line;
    await new Promise((r) => setTimeout(r, POLL_MS));
    c = (await api.getCeremony(c.ceremony_id)) as KeyCeremony;
  }
  return c;
}

/** Poll a key change until SUCCEEDED or FAILED, printing its status changes unless `--json`. */
async function waitKeyChange(ctx: AdminContext, api: AdminClient, kc: KeyChange): Promise<KeyChange> {
  let last = '';
  while (kc.status !== 'SUCCEEDED' && kc.status !== 'FAILED') {
    if (kc.status !== last && !ctx.json) ctx.io.out(`key change ${kc.status}`);
    last = kc.status;
    await new Promise((r) => setTimeout(r, POLL_MS));
    kc = await api.getKeyChange(kc.master_key_id, kc.change_id);
  }
  return kc;
}

/** The master key `id` as listed. @throws AdminCliError 404-like `UNKNOWN_MASTER_KEY` */
async function masterKeyOf(api: AdminClient, id: string): Promise<MasterKey> {
  const mk = (await api.allMasterKeys()).find((k) => k.master_key_id.toLowerCase() === id.toLowerCase());
  return mk ?? refuse('UNKNOWN_MASTER_KEY', `no master key ${id}`);
}

interface SignFlags {
  deviceKey: string;
  deviceId?: string;
  wait?: boolean;
  yes?: boolean;
}

/** Register `keys` on `admin`. */
export function registerKeyCommands(ctx: AdminContext): void {
  const { io } = ctx;
  const keys = ctx.admin
    .command('keys')
    .description('key lifecycle: refresh, replace a signer, reshare, key changes, recovery drill (Admin)');

  keys
    .command('refresh <master_key_id>')
    .description('new shares for the same parties and public keys (5-minute ceremony; step-up)')
    .option('--wait', 'wait for the outcome, printing progress')
    .action(
      ctx.run(async (id: string, o: { wait?: boolean }) => {
        const api = await ctx.client();
        let c = await api.refreshMasterKey(id);
        if (o.wait) c = await waitCeremony(ctx, api, c);
        ctx.print(c);
        if (c.status === 'FAILED' || c.status === 'TIMED_OUT') process.exitCode = 1;
      }),
    );

  /** Create, show, check, sign and (with --wait) follow a key change. */
  const change = async (id: string, build: (s: ServerSigner[], d: Device[]) => KeyChangeInput, o: SignFlags) => {
    let sk: Uint8Array;
    try {
      sk = await readDeviceKeyFile(o.deviceKey);
    } catch (e) {
      return ctx.fail((e as Error).message);
    }
    try {
      const api = await ctx.client();
      const [mk, signers, devices] = await Promise.all([masterKeyOf(api, id), api.allSigners(), api.allDevices()]);
      const input = build(signers, devices);
      const view = await api.createKeyChange(mk.master_key_id, input);
      if (!ctx.json) io.out(describeKeyChange(view, mk, signers, devices));
      checkKeyChange(view, { masterKey: mk, input, signers, devices });
      const signed = signKeyChange(view.document, o.deviceId ?? '', sk);
      let deviceId = o.deviceId;
      if (deviceId === undefined) {
        const mine = devices.filter(
          (d) => d.status === 'APPROVED' && d.public_key.toLowerCase() === signed.device_public_key,
        );
        if (mine.length !== 1)
          refuse('UNKNOWN_DEVICE', 'the device key is not the key of one APPROVED device: give --device-id');
        deviceId = mine[0]!.device_id;
      }
      if (!o.yes && ctx.canPrompt()) {
        const a = await io.prompt!(`sign key change ${view.change_id} with device ${deviceId}? [y/N] `, false);
        if (!/^y(es)?$/i.test(a)) refuse('NOT_CONFIRMED', 'not signed');
      }
      let c = await api.signKeyChange(mk.master_key_id, view.change_id, {
        device_id: deviceId,
        signature: signed.signature,
      });
      if (!o.wait) return ctx.print(c);
      c = await waitCeremony(ctx, api, c);
      const done =
        c.status === 'SUCCEEDED'
          ? await waitKeyChange(ctx, api, await api.getKeyChange(mk.master_key_id, view.change_id))
          : await api.getKeyChange(mk.master_key_id, view.change_id);
      ctx.print(done);
      if (done.status !== 'SUCCEEDED') process.exitCode = 1;
    } finally {
      sk.fill(0);
    }
  };
  const signOpts = (c: ReturnType<typeof keys.command>) =>
    c
      .requiredOption('--device-key <file>', "the Admin's enrolled device: raw P-256 secret key, 64 hex digits")
      .option('--device-id <device_id>', 'that device (default: the APPROVED device with this key)')
      .option('--yes', 'sign without asking (a terminal asks after showing the change)')
      .option('--wait', 'wait for the outcome (ceremony, then commit), printing progress');

  signOpts(
    keys
      .command('replace-signer <master_key_id> <old> <new>')
      .description(
        'move the key from one party to another (a lost phone to a new one, a server to a new one): server:<id> or device:<id>; step-up',
      ),
  ).action(
    ctx.run(async (id: string, oldRef: string, newRef: string, o: SignFlags) =>
      change(
        id,
        (s, d) => ({ reason: 'replace-signer', old: resolveParty(oldRef, s, d), new: resolveParty(newRef, s, d) }),
        o,
      ),
    ),
  );

  signOpts(
    keys
      .command('reshare <master_key_id>')
      .description("move the key to a new party set and threshold t' (at least 2 mobile signers; step-up)")
      .requiredOption('--threshold <t>', "t' of the new set")
      .requiredOption('--signers <list>', 'the new set, comma-separated: server:<id>, device:<id> or bare ids/names'),
  ).action(
    ctx.run(async (id: string, o: SignFlags & { threshold: string; signers: string }) => {
      const t = Number(o.threshold);
      if (!Number.isInteger(t)) refuse('INVALID_THRESHOLD', `--threshold ${o.threshold}: not a whole number`);
      const refs = o.signers
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
      return change(
        id,
        (s, d) => ({ reason: 'reshare', threshold: t, signers: refs.map((r) => resolveParty(r, s, d)) }),
        o,
      );
    }),
  );

  const changes = pageOpts(
    keys.command('changes <master_key_id>').description('key changes of a master key, newest first'),
  ).action(
    ctx.run(async (id: string, o: PageFlags) =>
      ctx.print(await (await ctx.client()).listKeyChanges(id, pageQuery(o)), [
        'change_id',
        'reason',
        'status',
        'ceremony_id',
        'uncommitted',
        'created_at',
        'error',
      ]),
    ),
  );
  changes
    .command('show <master_key_id> <change_id>')
    .description('one key change with its document and digest')
    .action(ctx.run(async (id: string, cid: string) => ctx.print(await (await ctx.client()).getKeyChange(id, cid))));

  keys
    .command('drill <master_key_id>')
    .description(
      'recovery drill: test signatures by the live signers (verified) and each backup’s state; no funds move (step-up)',
    )
    .option('--wait', 'wait for the outcome and print it (exit code 1 unless everything passed)')
    .action(
      ctx.run(async (id: string, o: { wait?: boolean }) => {
        const api = await ctx.client();
        let c = await api.drillMasterKey(id);
        if (!o.wait) return ctx.print(c);
        c = await waitCeremony(ctx, api, c);
        const result = c.result as DrillResult | undefined | null;
        const passed = c.status === 'SUCCEEDED' && drillPassed(result ?? undefined);
        if (ctx.json) io.out(JSON.stringify({ ...c, passed }, null, 2));
        else {
          io.out(`drill ${c.ceremony_id}: ${c.status}${c.error ? ` — ${c.error}` : ''}`);
          if (result) {
            io.out(
              formatTable(
                result.signatures.map((s) => ({
                  algorithm: s.algorithm,
                  verified: s.verified,
                  public_key: s.public_key,
                })),
              ),
            );
            io.out(
              formatTable(
                result.signers.map((s) => ({
                  party: `${s.kind}:${s.id}`,
                  epoch: s.epoch,
                  backup_epoch: s.backup_epoch,
                  backup_at: s.backup_at,
                  backup_current: s.backup_current,
                })),
              ),
            );
          }
          io.out(passed ? 'drill passed' : 'drill FAILED');
        }
        if (!passed) process.exitCode = 1;
      }),
    );
}
