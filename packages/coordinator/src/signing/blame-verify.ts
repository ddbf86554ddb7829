/**
 * TEMPORARY adapter (issue #23 part 3): the shape of `@custodian/wire` `verifyBlame` (branch
 * `verify`, packages/wire/src/blame.ts) until that branch is merged. It verifies nothing: every
 * blame is unverified, so nothing unverified is ever called verified. Replaced by the wire import.
 */

/** The decoded `custodian.v1.Blame` (camelCase, as the wire codec yields it). */
export interface WireBlame {
  readonly party: number;
  readonly peerId: string;
  readonly reason: string;
  readonly check?: string;
  readonly round?: number;
  readonly protocol?: string;
}

/** Context of one blame: the ceremony it claims to come from and who reported it. */
export interface BlameContext {
  readonly ceremonyId: Uint8Array;
  readonly ceremonyParties: readonly string[];
  readonly accuser: string;
}

/** What the coordinator concluded about one blame. */
export interface BlameVerdict {
  readonly verified: boolean;
  readonly culprit: string;
  readonly accuser: string;
  readonly check: string;
  readonly round: number;
  readonly protocol: string;
  readonly detail: string;
}

/** Every blame unverified (see the module comment). Never throws. */
export function verifyBlame(blame: WireBlame, ctx: BlameContext): BlameVerdict {
  return {
    verified: false,
    culprit: typeof blame.peerId === 'string' ? blame.peerId : '',
    accuser: ctx.accuser,
    check: blame.check || 'check.unspecified',
    round: blame.round ?? 0,
    protocol: blame.protocol ?? '',
    detail: 'the evidence was not checked',
  };
}
