/**
 * The presignature pool's ceremonies: PRESIGN (CGGMP21 presigning of up to 64 presignatures for a
 * signing set, stored in one batch) and the coordinator's reconciliation requests (inventory and
 * deletion of orphans, control.proto `PresignatureInventory` / `DeletePresignatures`). The stored
 * presignatures themselves: presignatures.ts.
 */
import { type Presignature, presignProtocol } from '@custodian/cggmp';
import { bytesToHex } from '@custodian/crypto';
import {
  type CeremonyResult,
  CONTROL_VERSION,
  type ControlRequest,
  type ControlResponse,
  Outcome,
  type StartCeremony,
} from '@custodian/wire';
import { deletePresignatures, heldPresignatures, presignaturePuts } from '../presignatures.js';
import type { SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import {
  type CeremonyContext,
  combinedTranscript,
  failure,
  Refused,
  refusedOrAborted,
  sessionId,
  toSessionParties,
} from './context.js';
import { keyRecord, loadEcdsaShare, loadKeyRecord } from './keys.js';
import { signingSet } from './sign-ecdsa.js';

/** A presignature id: `<ceremony id hex (16..64 bytes)>.<index 0..63>`. */
const PRESIGNATURE_ID = /^(?:[0-9a-f]{2}){16,64}\.(?:[0-9]|[1-5][0-9]|6[0-3])$/;

/**
 * Answer the coordinator's presignature reconciliation requests (control.proto
 * `PresignatureInventory`, `DeletePresignatures`; presignatures.ts {@link heldPresignatures},
 * {@link deletePresignatures}): the signing set is given as the parties' peer ids (any order),
 * which must be parties of the key (with this signer among them, at least the threshold). Ids and
 * ages only, never contents; an id a SIGN is taking is neither listed nor deleted. Counts are
 * logged, not ids.
 * @returns the answer, or a REFUSED result naming the problem (unknown key, no ECDSA key, a party
 *   not of the key, a malformed id)
 */
export async function presignatureControl(
  ctx: CeremonyContext,
  req: Pick<ControlRequest, 'presignatureInventory' | 'deletePresignatures'>,
): Promise<ControlResponse> {
  const body = req.presignatureInventory ?? req.deletePresignatures;
  try {
    if (!body) throw new Refused('no presignature request');
    const keyId = body.keyId ?? '';
    if (keyId === '' || keyId.includes('/') || keyId.length > 128) throw new Refused('keyId: malformed');
    const rec = await keyRecord(ctx, keyId);
    if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
    if (!rec.keys.some((k) => k.suite === 'cggmp')) throw new Refused(`key ${keyId} has no ECDSA key`, 'KEY_UNKNOWN');
    const parties = toSessionParties((body.parties ?? []).map((p) => p.peerId));
    const { signers, self } = signingSet(ctx, rec, parties);
    if (self < 0) throw new Refused('this signer is not in the party set');
    if (req.presignatureInventory) {
      const presignatures = await heldPresignatures(ctx.store, keyId, signers);
      ctx.log.debug({ key: keyId, signers, held: presignatures.length }, 'presignature inventory');
      return { version: CONTROL_VERSION, presignatureInventory: { presignatures } };
    }
    const ids = req.deletePresignatures?.ids ?? [];
    const bad = ids.findIndex((id) => typeof id !== 'string' || !PRESIGNATURE_ID.test(id));
    if (bad >= 0) throw new Refused(`ids[${bad}]: not a presignature id`);
    const r = await deletePresignatures(ctx.store, keyId, signers, ids, ctx.prepared);
    ctx.log.info(
      { key: keyId, signers, requested: ids.length, deleted: r.deleted, inUse: r.inUse.length },
      'orphaned presignatures deleted at the coordinator’s request',
    );
    return { version: CONTROL_VERSION, deletePresignatures: r };
  } catch (e) {
    if (!(e instanceof Refused))
      ctx.log.error({ err: e instanceof Error ? e.message : String(e) }, 'presignature request failed');
    return { version: CONTROL_VERSION, result: refusedOrAborted(new Uint8Array(0), e) };
  }
}

/**
 * CGGMP21 presigning for the pool: `presignCount` presignatures for the signing set `parties` of
 * key `keyId`, stored (encrypted) in one batch with ids `<ceremony id hex>.<i>` only when every
 * session succeeded and the key record's epoch is still the one they were made with (run.ts checks
 * it under the store's write lock; otherwise the result is ABORTED and nothing is stored).
 */
export async function presign(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[]; stored?: () => void; epoch?: number }> {
  const keyId = start.keyId ?? '';
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  if (!rec.keys.some((k) => k.suite === 'cggmp')) throw new Refused(`key ${keyId} has no ECDSA key`, 'KEY_UNKNOWN');
  const count = start.presignCount ?? 0;
  if (!Number.isSafeInteger(count) || count < 1 || count > 64) throw new Refused('presignCount: 1..64');
  const share = await loadEcdsaShare(ctx, keyId);
  const { signers, ordered, self } = signingSet(ctx, rec, parties);
  const cid = bytesToHex(ceremonyId);
  const outs = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      ctx.runner.run<Presignature>({
        parties: ordered,
        self,
        secretKey: ctx.secretKey,
        deadline,
        group: cid,
        sessionId: sessionId(ceremonyId, `pool.cggmp.presign.${i}`),
        spec: presignProtocol({ share, signers }),
        label: `pool.cggmp.presign.${i}`,
      }),
    ),
  );
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, ordered), ops: [] };
  const items = outs.map((o, i) => ({ id: `${cid}.${i}`, presignature: (o as { output: Presignature }).output }));
  // exporting seals the handles: the stored bytes are the presignatures from here on
  const ops = presignaturePuts(keyId, items);
  return {
    // held in memory only once durably stored (PreparedPresignatures' invariant)
    stored: () => ctx.prepared?.add(ops),
    // made with the shares of this epoch: run.ts drops them if a commit or refresh changed it meanwhile
    epoch: rec.epoch,
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      presignatureIds: items.map((x) => x.id),
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops,
  };
}
