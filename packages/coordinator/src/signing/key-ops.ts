/**
 * The signing room's side of key lifecycle operations (issue #22; keys/service.ts sequences them):
 * run a REFRESH, RESHARE, RESHARE_COMMIT or DRILL ceremony among given parties (server signers over
 * libp2p `/custodian/control/2`, devices through the hub; dispatch.ts), ask a server signer for its
 * status (key epochs, backup state), and push `RevokeApprover` (control.proto) to the server
 * signers — at once when a device leaves APPROVED, and again before any later ceremony to a signer
 * that has not acknowledged it (a signer offline at the revocation learns it when it next takes
 * part, as with policy sync). Acknowledgements are kept in `revocation_acks` (per device, peer id and store id).
 */
import type { ControlClient } from '@custodian/signer-client';
import { type NodeStatus, Outcome, type StartCeremony } from '@custodian/wire';
import { hexToBytes } from '@noble/curves/utils.js';
import type { Db } from '../db/db.js';
import { type DeviceCeremonyPort, dispatchCeremony, type PartyDirectory } from './dispatch.js';
import type { PartyDispatch, PartyResult, SignParty } from './sign-results.js';

/** What the keys room asks of the signing services. */
export interface KeyCeremonyPort {
  /**
   * Run one ceremony among `parties` (in this order: `start.parties` is built from them). A party
   * that cannot be resolved or reached yields an unreachable result (the others are aborted).
   * Devices are waited for until `start.deadlineUnixMs`.
   */
  run(
    parties: readonly SignParty[],
    start: Omit<StartCeremony, 'parties'>,
    signal: AbortSignal,
    /** `sessionPeers`: `start.parties` to send instead of the parties' own peer ids (a commit sent to one party of a session). */
    opts?: { sessionPeers?: readonly string[] },
  ): Promise<PartyResult[]>;
  /** MPC peer id of a party now (servers: registered; devices: as connected). @throws Error when unknown / not connected */
  peerIdOf(party: SignParty): Promise<string>;
  /** Whether the party is connected now (`'up'`), not (`'down'`), or not known (`undefined`). */
  availability(party: SignParty): Promise<'up' | 'down' | undefined>;
  /** A server signer's status. @throws Error on transport failure */
  status(party: SignParty): Promise<NodeStatus>;
  /**
   * Push every revocation not yet acknowledged to every live server signer (bounded by
   * `timeoutMs` each), and every revocation to the connected phones (no acknowledgement; a phone
   * gets them all again when it connects). @returns the server peer ids that did not acknowledge
   */
  pushRevocations(timeoutMs?: number): Promise<string[]>;
}

/** Components of {@link createKeyCeremonyPort}. */
export interface KeyCeremonyPortInit {
  db: Db;
  /** The revocations pushed to the server signers (also before every ceremony, services.ts `prepare`). */
  revocations: RevocationSync;
  control: ControlClient;
  directory: PartyDirectory;
  devices: DeviceCeremonyPort & {
    /** Wait until the device connected (rejects at `until`, Unix ms, or on `signal`). */
    waitOnline(deviceId: string, until: number, signal: AbortSignal): Promise<unknown>;
    peerIdOf(deviceId: string): string | undefined;
  };
  /** Re-read and list the live server signers' peer ids. */
  serverPeers(): Promise<string[]>;
  /** Push the revocations to the connected phones too (device hub; best effort). */
  pushToPhones?(revoked: readonly { deviceId: string; publicKey: string }[]): void;
  prepare(targets: readonly PartyDispatch[]): Promise<void>;
  availability(party: SignParty): Promise<'up' | 'down' | undefined>;
  clock: () => Date;
}

/** Build the port over the control client and the device hub. */
export function createKeyCeremonyPort(init: KeyCeremonyPortInit): KeyCeremonyPort {
  const revocations = init.revocations;
  const peerOf = async (p: SignParty, until: number, signal: AbortSignal): Promise<string> => {
    if (p.kind === 'server') return init.directory.peerIdOf(p);
    const known = init.devices.peerIdOf(p.id.toLowerCase());
    if (known) return init.directory.peerIdOf(p);
    await init.devices.waitOnline(p.id.toLowerCase(), until, signal);
    return init.directory.peerIdOf(p);
  };
  return {
    async run(parties, start, signal, opts = {}) {
      const targets: PartyDispatch[] = [];
      const missing: PartyResult[] = [];
      await Promise.all(
        parties.map(async (party) => {
          try {
            targets.push({ party, peerId: await peerOf(party, Number(start.deadlineUnixMs), signal) });
          } catch (e) {
            missing.push({
              party,
              result: {
                ceremonyId: start.ceremonyId,
                outcome: Outcome.ABORTED,
                error: `unreachable: ${(e as Error).message}`,
              },
              unreachable: true,
            });
          }
        }),
      );
      if (missing.length > 0) return missing;
      // keep the caller's order (Promise.all pushed in completion order)
      targets.sort((a, b) => parties.indexOf(a.party) - parties.indexOf(b.party));
      // prepare also pushes unacknowledged revocations to the server parties (services.ts)
      await init.prepare(targets);
      const full: StartCeremony = {
        ...start,
        parties: (opts.sessionPeers ?? targets.map((t) => t.peerId)).map((peerId) => ({ peerId })),
      };
      return dispatchCeremony(init, targets, full, signal, { abortOnFailure: true });
    },
    peerIdOf: (p) => init.directory.peerIdOf(p),
    availability: (p) => init.availability(p),
    async status(party) {
      if (party.kind !== 'server') throw new Error('status: server signers only');
      return init.control.status(await init.directory.peerIdOf(party));
    },
    async pushRevocations(timeoutMs = 5000) {
      init.pushToPhones?.(await revocations.revoked());
      return revocations.ensure(await init.serverPeers(), timeoutMs);
    },
  };
}

/**
 * Pushes the recorded revocations (`revoked_approvers`, written by the devices room) to signers
 * that have not acknowledged them, recording each acknowledgement (`revocation_acks`) by device,
 * peer id and the signer's store id (control `status` `storeId`; '' for a signer that reports
 * none): a signer whose store is new (restored from a backup made before a revocation) gets every
 * revocation again before its next ceremony.
 */
export class RevocationSync {
  constructor(private readonly c: { db: Db; control: ControlClient; clock: () => Date }) {}

  /** Every revoked device (id, compressed P-256 key hex), oldest first. */
  async revoked(): Promise<{ deviceId: string; publicKey: string }[]> {
    const rows = await this.c.db.query<{ device_id: string; public_key: string }>(
      'SELECT device_id::text AS device_id, public_key FROM revoked_approvers ORDER BY revoked_at, device_id',
    );
    return rows.map((r) => ({ deviceId: r.device_id, publicKey: r.public_key }));
  }

  /** @returns the peer ids that failed */
  async ensure(peers: readonly string[], timeoutMs = 5000): Promise<string[]> {
    if (peers.length === 0) return [];
    const revoked = await this.c.db.query<{ device_id: string; public_key: string }>(
      'SELECT device_id::text AS device_id, public_key FROM revoked_approvers ORDER BY revoked_at, device_id',
    );
    if (revoked.length === 0) return [];
    const failed = new Set<string>();
    // each signer's store id now (a signer that does not answer fails here as its push would)
    const stores = new Map<string, string>();
    await Promise.all(
      peers.map(async (peer) => {
        try {
          const res = await this.c.control.send(peer, { status: {} }, timeoutMs);
          if (!res.status) throw new Error('no status');
          stores.set(peer, typeof res.status.storeId === 'string' ? res.status.storeId : '');
        } catch {
          failed.add(peer);
        }
      }),
    );
    const acks = new Set(
      (
        await this.c.db.query<{ device_id: string; peer_id: string; store_id: string }>(
          'SELECT device_id::text AS device_id, peer_id, store_id FROM revocation_acks',
        )
      ).map((a) => `${a.device_id} ${a.peer_id} ${a.store_id}`),
    );
    const rows = peers
      .filter((peer) => stores.has(peer))
      .flatMap((peer_id) =>
        revoked
          .filter((r) => !acks.has(`${r.device_id} ${peer_id} ${stores.get(peer_id)}`))
          .map((r) => ({ ...r, peer_id })),
      );
    await Promise.all(
      [...new Set(rows.map((r) => r.peer_id))].map(async (peer) => {
        for (const r of rows.filter((x) => x.peer_id === peer)) {
          try {
            const res = await this.c.control.send(
              peer,
              {
                revokeApprover: {
                  deviceId: r.device_id,
                  ...(/^[0-9a-f]{66}$/.test(r.public_key) ? { publicKey: hexToBytes(r.public_key) } : {}),
                },
              },
              timeoutMs,
            );
            if (!res.revokeApprover) throw new Error(res.result?.error || 'no revocation result');
            await this.c.db.query(
              'INSERT INTO revocation_acks (device_id, peer_id, store_id, acked_at) VALUES ($1,$2,$3,$4) ON CONFLICT DO NOTHING',
              [r.device_id, peer, stores.get(peer) ?? '', this.c.clock()],
            );
          } catch {
            failed.add(peer);
            return;
          }
        }
      }),
    );
    return [...failed];
  }
}
