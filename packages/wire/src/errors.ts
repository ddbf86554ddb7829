/**
 * Typed rejections of the wire layer. Decoding never throws for bad input: it returns a
 * {@link WireRejection} whose `reason` is safe to log (it never contains payload bytes) and whose
 * `party` names the sender when the sender is identifiable (authenticated or claimed, see `authenticated`).
 */

import { CustodianError } from '@custodian/crypto';

/**
 * Base of the `wire` family of {@link CustodianError} (thrown, unlike rejections, only by the
 * converter on a schema or limit violation; caught and turned into a rejection at the API).
 * Codes: `WIRE_SCHEMA_VIOLATION`.
 */
export class WireError extends CustodianError {
  readonly family = 'wire' as const;
}

/** Stable rejection codes. */
export type WireRejectionCode =
  | 'oversize'
  | 'malformed'
  | 'bad-version'
  | 'unknown-sender'
  | 'bad-signature'
  | 'wrong-session'
  | 'wrong-protocol'
  | 'wrong-receiver'
  | 'decrypt-failed'
  | 'replay'
  | 'schema'
  | 'limit';

/** Why an incoming message was dropped. */
export interface WireRejection {
  readonly code: WireRejectionCode;
  /** Human-readable, loggable reason (never secret material). */
  readonly reason: string;
  /** Sender party index when known. */
  readonly party?: number;
  /** True when `party` was authenticated by a valid envelope signature (then it is blameable). */
  readonly authenticated?: boolean;
}

/** Result of a decode: the value or a typed rejection. */
export type WireResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly rejection: WireRejection };

/** Build a failed {@link WireResult}. */
export function reject<T>(
  code: WireRejectionCode,
  reason: string,
  party?: number,
  authenticated?: boolean,
): WireResult<T> {
  return {
    ok: false,
    rejection: {
      code,
      reason,
      ...(party !== undefined ? { party } : {}),
      ...(authenticated !== undefined ? { authenticated } : {}),
    },
  };
}

/** Build a successful {@link WireResult}. */
export function accept<T>(value: T): WireResult<T> {
  return { ok: true, value };
}
