/**
 * The role agreement that opens a RESHARE session (issue #22): every party of the session learns
 * which runtime index deals with which OLD identifier. An old party knows every role from its key
 * record; a party that is new to the key does not (the request and the Admin-signed key change name
 * only the new set), and the resharing protocols bind every role into their context. One broadcast
 * round, then the runtime's echo round (so every party outputs the same roles):
 * - round 0: each party broadcasts `{ old }`, its old identifier as 2 bytes big-endian (0: not a
 *   party of the key);
 * - process: a party that holds the key's record compares each claim with the record (peer id at
 *   position k ↔ identifier k + 1; not in the record ↔ 0) and names every party whose claim
 *   differs; every party names a claim that repeats another's identifier, and a party that claims
 *   no identifier yet is not in the new set (it would neither deal nor receive).
 * A party new to the key trusts the agreed claims only as far as the resharing protocols check
 * them: each dealer's Feldman commitment must be λ_i·Y_i for the identifier it claimed, and the
 * dealers' λ-weighted secrets must add up to the key of the Admin-signed change.
 *
 * Protocol tag `custodian.ceremony.reshare-roles`; its body travels as the self-describing
 * `custodian.v1.Value` (packages/wire rounds.ts: no registered schema).
 */
import { blame, type ProtocolSpec } from '@custodian/crypto';

/** Protocol tag of the role agreement. */
export const RESHARE_ROLES_TAG = 'custodian.ceremony.reshare-roles';

/** Largest old identifier a claim may carry. */
const MAX_ID = 0xffff;

interface RolesState {
  readonly own: number;
}

/**
 * The role agreement (see the module comment).
 * @param peerIds the session's peer ids by runtime index
 * @param newParties the new set's peer ids
 * @param members the key's parties in identifier order when this party holds the key's record
 * @returns a spec whose output is the old identifier of each runtime index (0: does not deal)
 */
export function reshareRolesProtocol(
  peerIds: readonly string[],
  newParties: readonly string[],
  members: readonly string[] | undefined,
): ProtocolSpec<RolesState, number[]> {
  const claimOf = (peer: string): number => (members ? members.indexOf(peer) + 1 : 0);
  return {
    name: RESHARE_ROLES_TAG,
    start(ctx) {
      const own = claimOf(peerIds[ctx.self] as string);
      return { state: { own }, send: { broadcast: { old: Uint8Array.of(own >> 8, own & 0xff) } } };
    },
    rounds: [
      {
        name: `${RESHARE_ROLES_TAG}.round1`,
        broadcast(body: unknown): number {
          const old = (body as { old?: unknown } | null)?.old;
          if (!(old instanceof Uint8Array) || old.length !== 2) throw new TypeError('old: 2 bytes expected');
          const v = ((old[0] as number) << 8) | (old[1] as number);
          if (v > MAX_ID) throw new RangeError('old: out of range');
          return v;
        },
        process(state, received, ctx) {
          const claims = Array.from({ length: ctx.n }, (_, j) =>
            j === ctx.self ? state.own : (received.get(j)?.broadcast as number),
          );
          const seen = new Map<number, number>();
          for (const [j, c] of claims.entries()) {
            const peer = peerIds[j] as string;
            if (j !== ctx.self && members && c !== claimOf(peer))
              blame(j, `claims old identifier ${c}, the key's record gives ${claimOf(peer)}`);
            if (c === 0 && !newParties.includes(peer)) blame(j, 'neither a party of the key nor in the new set');
            if (c !== 0) {
              const other = seen.get(c);
              if (other !== undefined) blame(j === ctx.self ? other : j, `old identifier ${c} claimed twice`);
              seen.set(c, j);
            }
          }
          return { output: claims };
        },
      },
    ],
  };
}
