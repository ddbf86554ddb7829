/**
 * {@link CeremonyClient} over the signer control protocol: runs the master key ceremony (DESIGN §3,
 * §4; seed §1 item 4) among server signers (libp2p `/custodian/control/2`) and mobile devices (the
 * device hub, WebSocket). Per seed §1 the selected devices take part automatically, with no
 * approval tap. Each party receives the same `StartCeremony { kind: MASTER_KEY, parties (MPC peer
 * ids, in the order of the request), threshold, deadline, algorithms }`; the signer key id of the
 * resulting key is the hex of the 16-byte ceremony UUID ({@link signerKeyId}).
 *
 * The outcome is accepted only when EVERY party answered OK with the same public keys, chain codes
 * and transcript hash (a party reporting something else fails the ceremony; nothing is stored).
 */
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { bytesToHex, equalBytes, hexToBytes } from '@noble/curves/utils.js';
import {
  CeremonyAbortedError,
  type CeremonyClient,
  type CeremonyParty,
  type DkgOutcome,
  type DkgRequest,
} from '../ceremony.js';
import { assessBlames, verifiedCulprits } from './blame.js';
import { dispatchCeremony, type PartyDispatch, type SignerGatewayInit } from './gateway.js';

/** Signer key id of the master key created by ceremony `ceremonyUuid`: the UUID's 32 hex digits. */
export function signerKeyId(ceremonyUuid: string): string {
  const hex = ceremonyUuid.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new RangeError('ceremony id: a UUID expected');
  return hex;
}

/** Components of {@link createMasterKeyClient}. */
export interface MasterKeyClientInit extends Pick<SignerGatewayInit, 'control' | 'devices' | 'responseSlackMs'> {
  /** MPC peer id of a device party; waits until the device connected once (rejects at `until`, Unix ms). */
  devicePeerId(deviceId: string, until: number, signal: AbortSignal): Promise<string>;
  /** Called before the ceremony starts with every party (open relay streams to servers when devices take part). */
  prepare?(targets: readonly PartyDispatch[]): Promise<void>;
  /** Algorithms to create (default: Ed25519, Taproot and ECDSA). ECDSA needs every party to hold safe primes. */
  algorithms?: number[];
  /**
   * Enrolled P-256 public key (compressed, hex) of a device party: sent to every signer as the
   * key's approver devices (the only devices whose approvals the signers accept).
   */
  deviceKey?(deviceId: string): Promise<string>;
}

const DEFAULT_ALGORITHMS = [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA];

/** Build the master key ceremony client. */
export function createMasterKeyClient(init: MasterKeyClientInit): CeremonyClient {
  return {
    async runDkg(req: DkgRequest): Promise<DkgOutcome> {
      const total = req.parties.length;
      req.onProgress({ phase: 'CONNECTING', parties_ready: 0, parties_total: total });
      const targets: PartyDispatch[] = [];
      let ready = 0;
      const peerOf = async (p: CeremonyParty): Promise<string> => {
        const peer = p.kind === 'server' ? p.peer : await init.devicePeerId(p.id, req.deadline.getTime(), req.signal);
        ready++;
        req.onProgress({ phase: 'CONNECTING', parties_ready: ready, parties_total: total });
        return peer;
      };
      try {
        const peers = await Promise.all(req.parties.map(peerOf));
        for (const [i, p] of req.parties.entries())
          targets.push({ party: { kind: p.kind, id: p.id }, peerId: peers[i] as string });
      } catch (e) {
        throw new Error(`not every party is reachable: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (req.signal.aborted) throw new Error('ceremony aborted');
      await init.prepare?.(targets);
      const approverDevices = init.deviceKey
        ? await Promise.all(
            req.parties
              .filter((p) => p.kind === 'device')
              .map(async (p) => ({
                deviceId: p.id,
                publicKey: hexToBytes(await (init.deviceKey as (id: string) => Promise<string>)(p.id)),
              })),
          )
        : [];
      const start: StartCeremony = {
        ceremonyId: hexToBytes(signerKeyId(req.ceremonyId)),
        kind: CeremonyKind.MASTER_KEY,
        parties: targets.map((t) => ({ peerId: t.peerId })),
        threshold: req.threshold,
        deadlineUnixMs: req.deadline.getTime(),
        algorithms: init.algorithms ?? DEFAULT_ALGORITHMS,
        ...(approverDevices.length > 0 ? { approverDevices } : {}),
      };
      req.onProgress({ phase: 'KEYGEN', parties_ready: 0, parties_total: total });
      let answered = 0;
      const devices = init.devices;
      const results = await dispatchCeremony(
        {
          control: init.control,
          ...(init.responseSlackMs !== undefined ? { responseSlackMs: init.responseSlackMs } : {}),
          ...(devices
            ? {
                devices: {
                  startCeremony: async (id: string, s: StartCeremony) => {
                    const r = await devices.startCeremony(id, s);
                    req.onProgress({ phase: 'CONFIRMING', parties_ready: ++answered, parties_total: total });
                    return r;
                  },
                  abortCeremony: (id: string, c: Uint8Array, why: string) => devices.abortCeremony(id, c, why),
                },
              }
            : {}),
        },
        targets,
        start,
        req.signal,
      );
      return outcomeOf(results, targets, start.ceremonyId);
    },
  };
}

function outcomeOf(
  results: readonly {
    party: { kind: string; id: string };
    result: CeremonyResult;
    unreachable: boolean;
    peerId?: string;
  }[],
  targets: readonly PartyDispatch[],
  ceremonyId: Uint8Array,
): DkgOutcome {
  // a blame names a culprit only with evidence the coordinator verified itself (signing/blame.ts)
  const blames = assessBlames(
    ceremonyId,
    targets.map((t) => t.peerId),
    results,
  );
  if (blames.length > 0) {
    const culprits = verifiedCulprits(blames, targets).map((p) => p.id);
    const by = results.find((r) => r.peerId !== undefined && blames.some((b) => b.accuser === r.peerId));
    throw new CeremonyAbortedError(
      `master key ceremony aborted: ${by?.result.error || 'misbehaviour'}`,
      culprits,
      blames,
    );
  }
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  if (failed.length > 0) {
    const what = failed.map((r) => `${r.party.kind} ${r.party.id}: ${outcomeName(r.result)}`).join('; ');
    throw new Error(`master key ceremony failed: ${what}`);
  }
  const first = results[0]?.result;
  if (!first) throw new Error('master key ceremony: no party');
  for (const r of results) {
    const a = r.result.publicKeys ?? [];
    const b = first.publicKeys ?? [];
    const same =
      a.length === b.length &&
      a.every(
        (k, i) =>
          k.algorithm === b[i]?.algorithm &&
          equalBytes(k.publicKey, b[i]?.publicKey ?? new Uint8Array(0)) &&
          equalBytes(k.chainCode, b[i]?.chainCode ?? new Uint8Array(0)),
      ) &&
      equalBytes(r.result.transcriptHash ?? new Uint8Array(0), first.transcriptHash ?? new Uint8Array(0));
    if (!same) throw new Error(`master key ceremony: ${r.party.kind} ${r.party.id} reported a different outcome`);
  }
  const pk = (alg: number) => first.publicKeys?.find((k) => k.algorithm === alg);
  const secp = pk(KeyAlgorithm.SECP256K1_ECDSA) ?? pk(KeyAlgorithm.SECP256K1_TAPROOT);
  const ed = pk(KeyAlgorithm.ED25519);
  if (!secp || !ed)
    throw new Error('master key ceremony: the signers did not create both a secp256k1 and an Ed25519 key');
  if (secp.publicKey.length !== 33)
    throw new Error('master key ceremony: the secp256k1 key is not a 33-byte compressed point');
  const tr = pk(KeyAlgorithm.SECP256K1_TAPROOT);
  // The Taproot key exactly as the signers hold it (the FROST group key, 33-byte compressed, of
  // either Y parity): P2TR addresses derive from it by BIP32 CKDpub, whose HMAC input includes the
  // parity byte — an x-only key (read as 02‖x) would derive other children than the signers do.
  if (tr !== undefined && tr.publicKey.length !== 33)
    throw new Error(
      `master key ceremony: the Taproot key is not a 33-byte compressed point (${tr.publicKey.length} bytes; its Y parity is needed to derive P2TR addresses)`,
    );
  return {
    secp256k1: { publicKey: Uint8Array.from(secp.publicKey), chainCode: Uint8Array.from(secp.chainCode) },
    ed25519: { publicKey: Uint8Array.from(ed.publicKey), chainCode: Uint8Array.from(ed.chainCode) },
    ...(tr !== undefined
      ? { taproot: { publicKey: Uint8Array.from(tr.publicKey), chainCode: Uint8Array.from(tr.chainCode) } }
      : {}),
    transcriptHash: bytesToHex(first.transcriptHash ?? new Uint8Array(0)),
  };
}

function outcomeName(r: CeremonyResult): string {
  const name =
    r.outcome === Outcome.REFUSED
      ? 'refused'
      : r.outcome === Outcome.DEADLINE_EXCEEDED
        ? 'deadline exceeded'
        : 'aborted';
  return r.error ? `${name} (${r.error})` : name;
}
