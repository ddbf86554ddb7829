/**
 * Defect found by the kill -9 sweep (packages/cli/test/kill-sweep.slow.test.ts): a signer that is
 * still running an earlier ceremony of the same transfer (the one a killed coordinator started)
 * refuses the retry as "already in progress". That refusal is transient — `SIGNING_IN_PROGRESS`,
 * not TRANSFER_ALREADY_SIGNED — and the coordinator waits for it (the gateway's UNAVAILABLE: the
 * transfer stays PENDING_SIGNATURE / WAITING_FOR_SIGNERS naming the signer and the reason) instead
 * of rejecting the transfer.
 *
 * Real components (faults-harness.ts): three signer processes with enforcement on, the signer
 * gateway over libp2p, the pipeline on the coordinator's database, the TRON chain model. The earlier
 * ceremony is a real one: the first time the pipeline asks, the test first sends the very same
 * sign request (same transfer, same digests) to the first signer of the set alone, through the
 * coordinator's control client, so that signer holds the transfer (waiting for a co-signer that
 * was never asked) until that ceremony's deadline.
 */
import { CeremonyKind, KeyAlgorithm } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import { type NodeSpec, readLog } from '../../signer/test/cluster.js';
import type { GatewaySignRequest, SignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';
import { approvedTransfer, eventsOf, pipeline, useFaultsEnv, waitTransfer } from './faults-harness.js';

describe('a signer still signing the transfer in an earlier ceremony', () => {
  const setup = useFaultsEnv('faults-in-progress');

  it('answers SIGNING_IN_PROGRESS: the transfer waits (WAITING_FOR_SIGNERS naming it), then is signed → SENT', async () => {
    const { env, wallet } = setup;
    const real = env.gateway;
    let busy: NodeSpec | undefined;
    let busyId = '';
    const gateway: SignerGateway = {
      async sign(req: GatewaySignRequest) {
        if (!busy) {
          // the earlier ceremony: this very request, to the set's first signer only, for 20 s
          busyId = req.parties[0]?.id as string;
          busy = env.nodes[env.serverIds.indexOf(busyId)] as NodeSpec;
          const before = readLog(busy).length;
          const peers = await Promise.all(
            req.parties.map((p) => env.nodes[env.serverIds.indexOf(p.id)]?.peerId as string),
          );
          const orphan = env.control.startCeremony(
            busy.peerId,
            {
              ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
              kind: CeremonyKind.SIGN,
              parties: peers.map((peerId) => ({ peerId })),
              threshold: 2,
              deadlineUnixMs: Date.now() + 20_000,
              sign: {
                keyId: req.keyId,
                algorithm: KeyAlgorithm.SECP256K1_ECDSA,
                derivationPath: [...req.derivationPath],
                digests: req.digests.map((d) => Uint8Array.from(d)),
                ...evidenceSignFields(req.evidence),
              },
            },
            30_000,
          );
          orphan.catch(() => undefined);
          for (let i = 0; i < 200 && !readLog(busy).slice(before).includes('"ceremony started"'); i++)
            await new Promise((r) => setTimeout(r, 50));
          expect(readLog(busy).slice(before)).toContain('"ceremony started"');
        }
        return real.sign(req);
      },
    };
    env.gateway = gateway;
    const lines: string[] = [];
    try {
      const p = pipeline(env, { retryInitialMs: 300, retryMaxMs: 1000 }, lines);
      const id = await approvedTransfer(env, wallet, '1');
      const waiting = await waitTransfer(env, id, (t) => t.status !== 'PENDING_SIGNATURE' || t.sub_status !== null);
      expect(waiting, JSON.stringify(waiting)).toMatchObject({
        status: 'PENDING_SIGNATURE',
        sub_status: 'WAITING_FOR_SIGNERS',
      });
      const error = (
        await env.coord.db.query<{ error: string }>('SELECT error FROM transfers WHERE transfer_id = $1', [id])
      )[0]?.error;
      expect(error).toContain(`server ${busyId}`);
      expect(error).toContain('SIGNING_IN_PROGRESS');
      const sent = await waitTransfer(env, id, (t) => ['SENT', 'FAILED', 'REJECTED'].includes(t.status), 90_000);
      expect(sent, JSON.stringify(sent)).toMatchObject({ status: 'SENT', sub_status: null });
      const events = await eventsOf(env, id);
      expect(events.filter((e) => e.startsWith('TRANSFER_FAILED'))).toEqual([]);
      expect(readLog(busy as NodeSpec)).toContain('SIGNING_IN_PROGRESS');
      await p.stop();
    } finally {
      env.gateway = real;
    }
  }, 300_000);
});
