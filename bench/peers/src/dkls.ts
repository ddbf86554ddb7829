/**
 * Driver of Silence Laboratories' DKLs23 (`@silencelaboratories/dkls-wasm-ll-node`, Rust → WASM):
 * every party in this process, messages routed in memory exactly as the package README shows
 * (broadcast = every other party receives a clone; p2p = the addressed party). WASM objects are
 * freed by the calls that consume them (`handleMessages`, `combine`, `keyshare`).
 */
import dkls from '@silencelaboratories/dkls-wasm-ll-node';

type Message = InstanceType<typeof dkls.Message>;
type SignSession = InstanceType<typeof dkls.SignSession>;

const others = (msgs: readonly Message[], party: number): Message[] =>
  msgs.filter((m) => m.from_id !== party).map((m) => m.clone());
const addressedTo = (msgs: readonly Message[], party: number): Message[] =>
  msgs.filter((m) => m.to_id === party).map((m) => m.clone());
const freeAll = (msgs: readonly Message[]): void => {
  for (const m of msgs) m.free();
};

/** DKG for n parties, threshold t; returns each party's serialised key share. */
export function dklsKeygen(n: number, t: number): Uint8Array[] {
  const parties = Array.from({ length: n }, (_, i) => new dkls.KeygenSession(n, t, i));
  const msg1 = parties.map((p) => p.createFirstMessage());
  const msg2 = parties.flatMap((p, i) => p.handleMessages(others(msg1, i)));
  const commitments = parties.map((p) => p.calculateChainCodeCommitment());
  const msg3 = parties.flatMap((p, i) => p.handleMessages(addressedTo(msg2, i)));
  const msg4 = parties.flatMap((p, i) => p.handleMessages(addressedTo(msg3, i), commitments));
  parties.forEach((p, i) => {
    p.handleMessages(others(msg4, i));
  });
  for (const batch of [msg1, msg2, msg3, msg4]) freeAll(batch);
  return parties.map((p) => {
    const share = p.keyshare();
    const bytes = share.toBytes();
    share.free();
    return bytes;
  });
}

/** The public key (33-byte compressed) of serialised DKLs key shares. */
export function dklsPublicKey(share: Uint8Array): Uint8Array {
  const k = dkls.Keyshare.fromBytes(share);
  const pk = k.publicKey;
  k.free();
  return pk;
}

/** Presigning for the first t parties (three message rounds): sessions holding a presignature. */
export function dklsPresign(shares: readonly Uint8Array[], t: number): SignSession[] {
  const parties = Array.from(
    { length: t },
    (_, i) => new dkls.SignSession(dkls.Keyshare.fromBytes(shares[i] as Uint8Array), 'm'),
  );
  const msg1 = parties.map((p) => p.createFirstMessage());
  const msg2 = parties.flatMap((p, i) => p.handleMessages(others(msg1, i)));
  const msg3 = parties.flatMap((p, i) => p.handleMessages(addressedTo(msg2, i)));
  parties.forEach((p, i) => {
    p.handleMessages(addressedTo(msg3, i));
  });
  for (const batch of [msg1, msg2, msg3]) freeAll(batch);
  return parties;
}

/** Online signing from presignatures: one broadcast round; returns each party's (r, s). */
export function dklsOnline(parties: readonly SignSession[], digest: Uint8Array): [Uint8Array, Uint8Array][] {
  const last = parties.map((p) => p.lastMessage(digest));
  const sigs = parties.map((p, i) => p.combine(others(last, i)) as [Uint8Array, Uint8Array]);
  freeAll(last);
  return sigs;
}
