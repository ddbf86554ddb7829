/**
 * Ceremony dispatch (DESIGN §4: the coordinator sequences, the signers execute): one signed
 * `StartCeremony` to every party — server signers over libp2p `/custodian/control/2`
 * (`@custodian/signer-client` {@link ControlClient}), mobile signers through the device hub (WebSocket,
 * `devices/hub.ts`) — and every party's `CeremonyResult` back; a party that cannot take part ends
 * the ceremony on every party at once (AbortCeremony, best effort), as do a deadline and the
 * caller's signal. Used by the signer gateway (gateway.ts), the master key client (master-key.ts)
 * and the presignature pool ({@link presignCeremony}). Split from gateway.ts (issue #21).
 */
import type { ControlClient } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, type ControlResponse, Outcome, type StartCeremony } from '@custodian/wire';
import { bytesToHex } from '@noble/curves/utils.js';
import { assessBlames, type BlameRecord } from './blame.js';
import type { PartyDispatch, PartyResult, SignParty } from './sign-results.js';

/** Resolves the coordinator's party records to MPC peer ids (libp2p Ed25519 peer id strings). */
export interface PartyDirectory {
  /**
   * Peer id of a party: a server signer's libp2p peer id, or a device's MPC identity peer id
   * (the Ed25519 key the device announced when it connected).
   * @throws Error when the party is unknown or not usable (removed signer, unapproved device)
   */
  peerIdOf(party: SignParty): Promise<string>;
}

/**
 * Carries a StartCeremony to device parties (implemented by the device hub, `devices/hub.ts`).
 * Absent: device parties are refused with `ABORTED` naming them.
 */
export interface DeviceCeremonyPort {
  /** Run the device's part of a ceremony; resolves with its result (rejects when the device is offline or silent). */
  startCeremony(deviceId: string, start: StartCeremony): Promise<CeremonyResult>;
  /** Best-effort abort. */
  abortCeremony(deviceId: string, ceremonyId: Uint8Array, reason: string): Promise<void>;
}

/** What {@link dispatchCeremony} needs: the control client, the device hub, the response slack. */
export interface DispatchInit {
  control: ControlClient;
  devices?: DeviceCeremonyPort;
  /** Extra slack after the deadline for the parties' responses to arrive, ms. Default 10 000. */
  responseSlackMs?: number;
}

/** Random 24-byte ceremony id. */
export function newCeremonyId(): Uint8Array {
  const id = new Uint8Array(24);
  globalThis.crypto.getRandomValues(id);
  return id;
}

/**
 * Send `start` to every party and collect the results (a party that fails to answer yields a
 * synthetic ABORTED result with its error). Aborts everywhere when `signal` fires.
 */
export async function dispatchCeremony(
  init: DispatchInit,
  targets: readonly PartyDispatch[],
  start: StartCeremony,
  signal?: AbortSignal,
  /**
   * `abortOnFailure`: abort the ceremony on every party as soon as one party answers anything but
   * OK. `onInterim`: interim frames of server signers (their position in `targets` and the body).
   */
  options: {
    abortOnFailure?: boolean;
    onInterim?: (position: number, response: ControlResponse) => void;
    /** The first party that failed (answered anything but OK, or could not be reached) before any abort by the coordinator. */
    onFirstFailure?: (party: SignParty) => void;
  } = {},
): Promise<PartyResult[]> {
  const slack = init.responseSlackMs ?? 10_000;
  const timeoutMs = Math.max(1000, Number(start.deadlineUnixMs) - Date.now() + slack);
  let aborting = false;
  const failed = (party: SignParty) => {
    if (!aborting) options.onFirstFailure?.(party);
    aborting = true;
  };
  const abortAll = (reason: string) => {
    aborting = true;
    for (const t of targets) {
      const p =
        t.party.kind === 'server'
          ? init.control.send(t.peerId, { abort: { ceremonyId: start.ceremonyId, reason } }, 10_000)
          : (init.devices?.abortCeremony(t.party.id, start.ceremonyId, reason) ?? Promise.resolve());
      p.catch(() => undefined);
    }
  };
  const onAbort = () => abortAll(String(signal?.reason ?? 'aborted by the coordinator'));
  signal?.addEventListener('abort', onAbort, { once: true });
  // once aborted, stop waiting: a party that does not answer (frozen, partitioned) must not hold
  // the caller — e.g. a coordinator stopping on SIGTERM — until the deadline (#29)
  let onStopWaiting: (() => void) | undefined;
  const stopWaiting = new Promise<never>((_, reject) => {
    onStopWaiting = () => reject(new Error(`aborted by the coordinator: ${String(signal?.reason ?? 'aborted')}`));
  });
  stopWaiting.catch(() => undefined);
  if (signal && onStopWaiting) signal.addEventListener('abort', onStopWaiting, { once: true });
  if (signal?.aborted) onStopWaiting?.();
  const orAbort = <T>(p: Promise<T>): Promise<T> => (signal ? Promise.race([p, stopWaiting]) : p);
  const deadlineTimer = setTimeout(() => abortAll('deadline exceeded'), Math.max(0, timeoutMs - slack + 500));
  deadlineTimer.unref?.();
  // server signers get the same signed request (signed once: the last starts as early as the first)
  const servers = targets.filter((t) => t.party.kind === 'server');
  const onInterim = options.onInterim;
  const serverCalls = new Map(
    init.control
      .startCeremonies(
        servers.map((t) => t.peerId),
        start,
        timeoutMs,
        onInterim ? (i, res) => onInterim(targets.indexOf(servers[i] as PartyDispatch), res) : undefined,
      )
      .map((p, i) => {
        p.catch(() => undefined); // awaited below
        return [servers[i] as PartyDispatch, p] as const;
      }),
  );
  try {
    return await Promise.all(
      targets.map(async (t) => {
        try {
          let result: CeremonyResult;
          if (t.party.kind === 'server') {
            result = await orAbort(serverCalls.get(t) as Promise<CeremonyResult>);
          } else {
            if (!init.devices) throw new Error('no device hub configured');
            result = await orAbort(withTimeout(init.devices.startCeremony(t.party.id, start), timeoutMs));
          }
          if (result.outcome !== Outcome.OK) failed(t.party);
          if (options.abortOnFailure && result.outcome !== Outcome.OK)
            abortAll(`${t.party.kind} ${t.party.id} did not take part`);
          return { party: t.party, result, unreachable: false, peerId: t.peerId };
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          failed(t.party);
          // a party that cannot take part (not reachable, its stream or socket closed, silent):
          // the others cannot finish without it — end the ceremony everywhere now, not at the deadline
          if (signal?.aborted)
            return {
              party: t.party,
              result: { ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: msg },
              unreachable: false,
            };
          if (options.abortOnFailure) abortAll(`${t.party.kind} ${t.party.id} is unreachable`);
          return {
            party: t.party,
            result: { ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: `unreachable: ${msg}` },
            unreachable: true,
          };
        }
      }),
    );
  } finally {
    clearTimeout(deadlineTimer);
    signal?.removeEventListener('abort', onAbort);
    if (onStopWaiting) signal?.removeEventListener('abort', onStopWaiting);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    t.unref?.();
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * Run one CGGMP21 PRESIGN ceremony (kind PRESIGN, `presign_count` = `count`, 1..64) for the
 * ECDSA key `keyId` among exactly `parties` (servers over libp2p, devices through the hub).
 * @returns the presignature ids every party stored (each `<ceremony id hex>.<index>`), or the failure
 */
export async function presignCeremony(
  init: DispatchInit & {
    directory: PartyDirectory;
    /** Called before the ceremony starts (opens relay streams to server signers when devices take part). */
    prepare?(targets: readonly PartyDispatch[]): Promise<void>;
    /** Records the checked blames of a failed PRESIGN ceremony (blame-store.ts `save`, kind `presign`); absent: not recorded. */
    blames?: { save(ceremonyId: string, kind: string, records: readonly BlameRecord[]): Promise<void> };
  },
  keyId: string,
  parties: readonly SignParty[],
  count: number,
  deadline: Date,
  signal?: AbortSignal,
): Promise<{ ok: true; ids: string[] } | { ok: false; error: string }> {
  if (!Number.isSafeInteger(count) || count < 1 || count > 64) throw new RangeError('count: 1..64');
  const targets: PartyDispatch[] = [];
  try {
    for (const party of parties) targets.push({ party, peerId: await init.directory.peerIdOf(party) });
    await init.prepare?.(targets);
  } catch (e) {
    return { ok: false, error: `party unavailable: ${e instanceof Error ? e.message : String(e)}` };
  }
  const start: StartCeremony = {
    ceremonyId: newCeremonyId(),
    kind: CeremonyKind.PRESIGN,
    parties: targets.map((t) => ({ peerId: t.peerId })),
    threshold: 0,
    deadlineUnixMs: deadline.getTime(),
    keyId,
    presignCount: count,
  };
  const results = await dispatchCeremony(init, targets, start, signal, { abortOnFailure: true });
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  // a blame is recorded as checked (names nobody unless verified); the pool only backs off the set
  const blames = assessBlames(
    start.ceremonyId,
    targets.map((t) => t.peerId),
    results,
  );
  if (blames.length > 0)
    await init.blames?.save(bytesToHex(start.ceremonyId), 'presign', blames).catch(() => undefined);
  if (failed.length > 0)
    return {
      ok: false,
      error: failed.map((r) => `${r.party.kind} ${r.party.id}: ${r.result.error || 'failed'}`).join('; '),
    };
  const sets = results.map((r) => new Set(r.result.presignatureIds ?? []));
  const ids = [...(sets[0] ?? [])].filter((id) => sets.every((s) => s.has(id)));
  return ids.length > 0 ? { ok: true, ids } : { ok: false, error: 'the parties stored no common presignature' };
}
