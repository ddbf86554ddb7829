/**
 * Registry of round message types: (protocol tag, round, part) → protobuf message type. A protocol
 * that registers its rounds gets typed, schema-checked payloads; a (protocol, round, part) without
 * a registration (only test protocols: FROST and CGGMP21 register every round) uses the
 * self-describing `custodian.v1.Value` (still protobuf — never JSON), and the runtime's echo round
 * (`round === echoRound`) uses `custodian.v1.EchoRound`.
 */
import type protobuf from 'protobufjs';
import { messageType } from './schema.js';

/** One round's message types by part (full protobuf names). */
export interface RoundTypes {
  readonly broadcast?: string;
  readonly p2p?: string;
}

/** Registration of one protocol's rounds. */
export interface ProtocolSchema {
  /** Protocol tag as carried in `Envelope.protocol`. */
  readonly protocol: string;
  /** Message types per runtime round index (round r = messages sent by round r−1's outbox). */
  readonly rounds: readonly RoundTypes[];
}

const registry = new Map<string, { rounds: (RoundTypes & { b?: protobuf.Type; p?: protobuf.Type })[] }>();

/**
 * Register (or replace) a protocol's round types.
 * @throws Error when a named type does not exist in the schema
 */
export function registerProtocolSchema(schema: ProtocolSchema): void {
  registry.set(schema.protocol, {
    rounds: schema.rounds.map((r) => ({
      ...r,
      ...(r.broadcast ? { b: messageType(r.broadcast) } : {}),
      ...(r.p2p ? { p: messageType(r.p2p) } : {}),
    })),
  });
}

const VALUE = messageType('custodian.v1.Value');
const ECHO = messageType('custodian.v1.EchoRound');

/**
 * Message type of a round part. `echoRound` is the protocol's `rounds.length` (the runtime's echo round).
 */
export function roundType(
  protocol: string,
  round: number,
  kind: 'broadcast' | 'p2p',
  echoRound?: number,
): protobuf.Type {
  if (echoRound !== undefined && round === echoRound && kind === 'broadcast') return ECHO;
  const r = registry.get(protocol)?.rounds[round];
  const t = kind === 'broadcast' ? r?.b : r?.p;
  return t ?? VALUE;
}

/** FROST DKG (packages/frost `dkgProtocol`): rounds 0–2; round 3 is the echo round. */
export const FROST_DKG_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.frost.dkg',
  rounds: [
    { broadcast: 'custodian.v1.frost.DkgRound0Broadcast' },
    { broadcast: 'custodian.v1.frost.DkgRound1Broadcast', p2p: 'custodian.v1.frost.DkgRound1Direct' },
    { broadcast: 'custodian.v1.frost.DkgRound2Broadcast' },
  ],
};

/** FROST signing (packages/frost `signProtocol`): rounds 0–1; round 2 is the echo round. */
export const FROST_SIGN_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.frost.sign',
  rounds: [
    { broadcast: 'custodian.v1.frost.SignRound0Broadcast' },
    { broadcast: 'custodian.v1.frost.SignRound1Broadcast' },
  ],
};

/** FROST refresh (packages/frost `refreshProtocol`): rounds 0–1; round 2 is the echo round. */
export const FROST_REFRESH_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.frost.refresh',
  rounds: [
    { broadcast: 'custodian.v1.frost.RefreshRound0Broadcast', p2p: 'custodian.v1.frost.RefreshRound0Direct' },
    { broadcast: 'custodian.v1.frost.RefreshRound1Broadcast' },
  ],
};

/** FROST resharing (packages/frost `reshareProtocol`): rounds 0–1; round 2 is the echo round. */
export const FROST_RESHARE_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.frost.reshare',
  rounds: [
    { broadcast: 'custodian.v1.frost.ReshareRound0Broadcast', p2p: 'custodian.v1.frost.ReshareRound0Direct' },
    { broadcast: 'custodian.v1.frost.ReshareRound1Broadcast' },
  ],
};

const C = 'custodian.v1.cggmp';

/** CGGMP21 threshold key generation (packages/cggmp `keygenProtocol`): rounds 0–2; round 3 is the echo round. */
export const CGGMP_KEYGEN_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.keygen.v1',
  rounds: [
    { broadcast: `${C}.Commitment` },
    { broadcast: `${C}.KeygenRound1Broadcast`, p2p: `${C}.ShareDirect` },
    { broadcast: `${C}.KeygenRound2Broadcast` },
  ],
};

/** CGGMP21 auxiliary info (packages/cggmp `auxInfoProtocol`): rounds 0–2; round 3 is the echo round. */
export const CGGMP_AUX_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.aux.v1',
  rounds: [
    { broadcast: `${C}.Commitment` },
    { broadcast: `${C}.AuxRound1Broadcast` },
    { broadcast: `${C}.ModProof`, p2p: `${C}.FacProof` },
  ],
};

/**
 * CGGMP21 presigning (packages/cggmp `presignProtocol`): rounds 0–2; rounds 3–4 (identification) run
 * only when the output check fails; round 5 is the echo round (after round 2's output).
 */
export const CGGMP_PRESIGN_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.presign.v1',
  rounds: [
    { broadcast: `${C}.PresignRound0Broadcast`, p2p: `${C}.EncProof` },
    { broadcast: `${C}.PresignRound1Broadcast`, p2p: `${C}.PresignRound1Direct` },
    { broadcast: `${C}.PresignRound2Broadcast`, p2p: `${C}.LogStarProof` },
    { broadcast: `${C}.PresignIdentPublish` },
    { broadcast: `${C}.PresignIdentProve` },
  ],
};

/** CGGMP21 signing (packages/cggmp `signProtocol`): round 0 only (no echo after the shares). */
export const CGGMP_SIGN_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.sign.v1',
  rounds: [{ broadcast: `${C}.SignRound0Broadcast` }],
};

/** CGGMP21 key refresh (packages/cggmp `refreshProtocol`): rounds 0–2; round 3 is the echo round. */
export const CGGMP_REFRESH_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.refresh.v1',
  rounds: [
    { broadcast: `${C}.Commitment` },
    { broadcast: `${C}.RefreshRound1Broadcast`, p2p: `${C}.ShareDirect` },
    { broadcast: `${C}.RefreshRound2Broadcast`, p2p: `${C}.FacProof` },
  ],
};

/** CGGMP21 core-share resharing (packages/cggmp `reshareProtocol`): rounds 0–1; round 2 is the echo round. */
export const CGGMP_RESHARE_SCHEMA: ProtocolSchema = {
  protocol: 'custodian.cggmp.reshare.v1',
  rounds: [
    { broadcast: `${C}.ReshareRound0Broadcast`, p2p: `${C}.ReshareRound0Direct` },
    { broadcast: `${C}.ReshareRound1Broadcast` },
  ],
};

/** Every registered protocol schema (FROST and CGGMP21). */
export const PROTOCOL_SCHEMAS: readonly ProtocolSchema[] = [
  FROST_DKG_SCHEMA,
  FROST_REFRESH_SCHEMA,
  FROST_SIGN_SCHEMA,
  CGGMP_KEYGEN_SCHEMA,
  CGGMP_AUX_SCHEMA,
  CGGMP_PRESIGN_SCHEMA,
  CGGMP_SIGN_SCHEMA,
  CGGMP_REFRESH_SCHEMA,
  FROST_RESHARE_SCHEMA,
  CGGMP_RESHARE_SCHEMA,
];

for (const schema of PROTOCOL_SCHEMAS) registerProtocolSchema(schema);
