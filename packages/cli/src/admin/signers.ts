/**
 * `custodian admin signers …` (server signers), `custodian admin master-keys …` (the k-of-n key
 * generation ceremony among exactly the selected signers) and `custodian admin ceremonies …`.
 */

import type { Blame } from '@custodian/coordinator/admin-api-types';
import { type AdminContext, formatTable, type PageFlags, pageOpts, pageQuery } from './context.js';

/** Register `signers` on `admin`. */
export function registerSignerCommands(ctx: AdminContext): void {
  const signers = ctx.admin.command('signers').description('server signers');
  pageOpts(signers.command('list').description('registered server signers, with reachable and last_seen_at')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listSigners(pageQuery(o)), [
        'signer_id',
        'name',
        'peer_id',
        'address',
        'reachable',
        'last_seen_at',
      ]),
    ),
  );
  signers
    .command('add')
    .description('register a server signer')
    .requiredOption('--name <name>')
    .requiredOption('--peer-id <peer_id>', 'libp2p peer id')
    .requiredOption('--address <multiaddr>', 'e.g. /ip4/10.0.0.5/tcp/7400')
    .requiredOption('--fingerprint <fingerprint>', 'identity key fingerprint')
    .action(
      ctx.run(async (o: { name: string; peerId: string; address: string; fingerprint: string }) =>
        ctx.print(
          await (await ctx.client()).addSigner({
            name: o.name,
            peer_id: o.peerId,
            address: o.address,
            fingerprint: o.fingerprint,
          }),
        ),
      ),
    );
  signers
    .command('remove <signer_id>')
    .description('remove a server signer')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).removeSigner(id))));
}

/** Register `master-keys` and `ceremonies` on `admin`. */
export function registerMasterKeyCommands(ctx: AdminContext): void {
  const { io } = ctx;
  const mk = ctx.admin.command('master-keys').description('the master key (DKG ceremony) and ceremonies');
  pageOpts(mk.command('list').description('master key records (public keys and chain codes), oldest first')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listMasterKeys(pageQuery(o)), [
        'master_key_id',
        'threshold',
        'secp256k1_public_key',
        'created_at',
      ]),
    ),
  );
  mk.command('create')
    .description('run the k-of-n ceremony among exactly the selected signers (5-minute timeout)')
    .requiredOption('--threshold <k>', 'signers needed to sign')
    .option('--server <signer_id...>', 'server signers', [])
    .option('--device <device_id...>', 'approved mobile devices', [])
    .option('--wait', 'wait for the outcome, printing progress')
    .action(
      ctx.run(async (o: { threshold: string; server: string[]; device: string[]; wait?: boolean }) => {
        const signers = [
          ...o.server.map((id) => ({ kind: 'server' as const, id })),
          ...o.device.map((id) => ({ kind: 'device' as const, id })),
        ];
        const api = await ctx.client();
        let c = await api.createMasterKey({ threshold: Number(o.threshold), signers });
        if (o.wait) {
          let last = '';
          while (c.status === 'RUNNING') {
            const p = `${c.progress.phase} ${c.progress.parties_ready}/${c.progress.parties_total}`;
            if (p !== last && !ctx.json) io.out(p);
            last = p;
            await new Promise((r) => setTimeout(r, 1000));
            c = await api.getCeremony(c.ceremony_id);
          }
        }
        ctx.print(c);
        if (c.status === 'FAILED' || c.status === 'TIMED_OUT') process.exitCode = 1;
      }),
    );
  const cer = ctx.admin.command('ceremonies').description('ceremony records');
  pageOpts(cer.command('list').description('ceremonies, newest first')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listCeremonies(pageQuery(o)), [
        'ceremony_id',
        'kind',
        'status',
        'threshold',
        'started_at',
        'finished_at',
        'error',
      ]),
    ),
  );
  cer
    .command('show <ceremony_id>')
    .description(
      'progress, outcome and blame (a UUID: master key and key lifecycle ceremonies; 48 hex digits: a signing ceremony)',
    )
    .action(
      ctx.run(async (id: string) => {
        const api = await ctx.client();
        const c = SIGN_ID.test(id) ? await api.getSigningCeremony(id) : await api.getCeremony(id);
        if (ctx.json) return ctx.print(c);
        const { blame, ...rest } = c;
        ctx.print(rest);
        io.out(`outcome: ${c.outcome ?? 'running'}`);
        if (blame.length === 0) {
          io.out('blame: none');
          return;
        }
        io.out('blame (verified: proven by evidence the coordinator checked; an unverified blame names nobody):');
        io.out(formatTable(blame.map(blameRow)));
        for (const b of blame.filter((x) => !x.verified)) io.out(disputeLine(b));
      }),
    );
}

/** A SIGN ceremony id: 24 bytes in hex. */
const SIGN_ID = /^[0-9a-fA-F]{48}$/;

const named = (name: string | null, peer: string) => (name ? `${name} (${peer})` : peer);

/** One blame as a table row: the proven culprit ('—' for an unverified blame: nobody is named), check, round, verified, accuser, detail. */
function blameRow(b: Blame): Record<string, unknown> {
  return {
    culprit: b.verified && b.culprit ? named(b.culprit_name, b.culprit) : '—',
    check: b.check,
    round: b.round,
    verified: b.verified ? 'yes' : 'no',
    accuser: named(b.accuser_name, b.accuser),
    detail: b.detail,
  };
}

/** An unverified blame (a dispute) for people: `unverified: <accuser> accuses <claimed> of <check>`. */
function disputeLine(b: Blame): string {
  const claimed = b.claimed_culprit ? named(b.claimed_culprit_name ?? null, b.claimed_culprit) : '(nobody)';
  return `unverified: ${named(b.accuser_name, b.accuser)} accuses ${claimed} of ${b.check}`;
}
