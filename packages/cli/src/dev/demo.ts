/**
 * The demo: drives a running local instance exactly as an integrator would, over HTTP only (plus
 * the local node's RPC to fund a deposit address, as an outside sender would): create a wallet,
 * fund its deposit address, see TRANSACTION_DETECTED and BALANCE_UPDATED arrive verified, check
 * the balance, send a transfer to a whitelisted address (approved by the mobile simulators with
 * their PINs, threshold-signed, broadcast, delivered), then a transfer to a non-whitelisted address
 * (REJECTED_BY_POLICY) and one above the quorum threshold that waits in PENDING_APPROVAL until the
 * second approver's phone comes online and approves.
 */
import { randomUUID } from 'node:crypto';
import { call, rpc, waitFor } from './http.js';
import type { Instance, ReceivedEvent } from './instance.js';

const ETH = 10n ** 18n;
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // anvil's account #0 (unlocked dev account)
const STRANGER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'; // anvil's account #2, not whitelisted

/** Outcome of the demo, for tests and the summary. */
export interface DemoResult {
  readonly walletId: string;
  readonly depositAddress: string;
  readonly sentTransferId: string;
  readonly txHash: string | null;
  readonly recipientDelta: bigint;
  readonly rejectedStatus: string;
  readonly rejectedSubStatus: string | null;
  readonly quorumTransferId: string;
  readonly quorumWaitedWithApprovals: number;
  readonly events: readonly string[];
}

interface TransferView {
  transfer_id: string;
  status: string;
  sub_status: string | null;
  approvals_required: number;
  approvals_received: number;
  tx_hash?: string | null;
  [k: string]: unknown;
}

const TERMINAL = new Set(['SENT', 'REJECTED', 'REJECTED_BY_POLICY', 'NO_POLICY_FOUND', 'EXPIRED', 'FAILED']);

/** Run the demo against `inst`; throws with a clear message on the first step that fails. */
export async function runDemo(
  inst: Instance,
  say: (l: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<DemoResult> {
  const { baseUrl, anvilUrl, state } = inst;
  const profile = state.profile_id as string;
  const api = `${baseUrl}/api/v1/profiles/${profile}`;
  const key = { 'x-api-key': state.api_key as string };
  const idem = () => ({ ...key, 'idempotency-key': randomUUID() });
  const step = async <T>(label: string, f: () => Promise<T>, outcome: (v: T) => string): Promise<T> => {
    const t0 = Date.now();
    say(`▶ ${label}`);
    const v = await f();
    say(`  ✔ ${outcome(v)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return v;
  };
  const seen = (type: string, pred: (e: ReceivedEvent) => boolean, what: string, timeoutMs = 90_000) =>
    waitFor(what, async () => inst.events.find((e) => e.event_type === type && pred(e)), timeoutMs);
  const getTransfer = async (id: string) =>
    (await call<TransferView>('GET', `${api}/transfers/${id}`, { headers: key })).body;
  const until = (id: string, pred: (t: TransferView) => boolean, what: string, timeoutMs = 240_000) =>
    waitFor(
      what,
      async () => {
        const t = await getTransfer(id);
        if (pred(t)) return t;
        if (TERMINAL.has(t.status))
          throw new Error(`transfer ${id} ended ${t.status}/${t.sub_status ?? ''} while waiting for ${what}`);
        return undefined;
      },
      timeoutMs,
      500,
    );

  // 1. wallet
  const wallet = await step(
    'create a wallet on the local Ethereum network (POST /wallets, Idempotency-Key)',
    async () =>
      (
        await call<{ wallet_id: string; addresses: { address: string; blockchain_id: string }[] }>(
          'POST',
          `${api}/wallets`,
          {
            headers: idem(),
            body: { name: `demo ${new Date().toISOString()}`, blockchain_ids: [state.ethereum_local_id] },
          },
        )
      ).body,
    (w) => `wallet ${w.wallet_id}, deposit address ${w.addresses[0]?.address}`,
  );
  const deposit = wallet.addresses[0]?.address as string;

  // 2. deposit from an outside account
  const amountIn = (3n * ETH) / 2n;
  await step(
    `fund the deposit address with 1.5 ETH from anvil's account #0`,
    () =>
      rpc<string>(anvilUrl, 'eth_sendTransaction', [
        { from: FUNDER, to: deposit, value: `0x${amountIn.toString(16)}` },
      ]),
    (h) => `deposit transaction ${h}`,
  );
  const lc = deposit.toLowerCase();
  const mentions = (e: ReceivedEvent) => JSON.stringify(e.data).toLowerCase().includes(lc);
  await step(
    'TRANSACTION_DETECTED arrives at the webhook receiver, verified',
    () => seen('TRANSACTION_DETECTED', mentions, 'TRANSACTION_DETECTED'),
    (e) => `event ${e.event_id}`,
  );
  await step(
    'BALANCE_UPDATED arrives after confirmation, verified',
    () => seen('BALANCE_UPDATED', mentions, 'BALANCE_UPDATED'),
    (e) => `event ${e.event_id}`,
  );
  const balance = await step(
    'check the balance endpoint (GET /wallets/{id}/balances/{asset_id})',
    async () =>
      (
        await call<{ amount: string }>('GET', `${api}/wallets/${wallet.wallet_id}/balances/${state.eth_asset_id}`, {
          headers: key,
        })
      ).body,
    (b) => `balance ${b.amount} ETH`,
  );
  if (balance.amount !== '1.5') throw new Error(`expected a balance of 1.5 ETH, got ${balance.amount}`);

  // 3. transfer to the whitelisted address
  const to = state.whitelisted as string;
  const before = BigInt(await rpc<string>(anvilUrl, 'eth_getBalance', [to, 'latest']));
  const created = await step(
    `transfer 0.1 ETH to the whitelisted ${to} (POST /transfers, Idempotency-Key)`,
    async () =>
      (
        await call<TransferView>('POST', `${api}/transfers`, {
          headers: idem(),
          body: {
            wallet_id: wallet.wallet_id,
            destination_address: to,
            asset_id: state.eth_asset_id,
            amount: '0.1',
            external_id: 'demo-1',
          },
        })
      ).body,
    (t) => `transfer ${t.transfer_id}: ${t.status}`,
  );
  await step(
    'the mobile signers approve with their PINs; threshold signing (CGGMP21, 3 of 4); broadcast',
    () => until(created.transfer_id, (t) => t.status === 'SENT', 'SENT'),
    (t) => `SENT ${t.tx_hash ?? ''}`,
  );
  await step(
    'TRANSFER_DELIVERED arrives after confirmation, verified',
    () => seen('TRANSFER_DELIVERED', (e) => e.data.transfer_id === created.transfer_id, 'TRANSFER_DELIVERED'),
    (e) => `event ${e.event_id}`,
  );
  const after = BigInt(await rpc<string>(anvilUrl, 'eth_getBalance', [to, 'latest']));
  const delta = after - before;
  say(
    `  ✔ the recipient's balance on the node changed by ${delta} wei (${delta === ETH / 10n ? 'exactly 0.1 ETH' : 'NOT 0.1 ETH'})`,
  );
  if (delta !== ETH / 10n) throw new Error(`recipient balance changed by ${delta} wei, expected exactly 0.1 ETH`);
  const sent = await getTransfer(created.transfer_id);

  // 4. non-whitelisted
  const rejected = await step(
    `transfer 0.1 ETH to the non-whitelisted ${STRANGER}`,
    async () => {
      const t = (
        await call<TransferView>('POST', `${api}/transfers`, {
          headers: idem(),
          body: {
            wallet_id: wallet.wallet_id,
            destination_address: STRANGER,
            asset_id: state.eth_asset_id,
            amount: '0.1',
          },
        })
      ).body;
      return waitFor(
        'a policy decision',
        async () => {
          const v = await getTransfer(t.transfer_id);
          return TERMINAL.has(v.status) ? v : undefined;
        },
        30_000,
      );
    },
    (t) => `${t.status} / ${t.sub_status}`,
  );
  if (rejected.status !== 'REJECTED_BY_POLICY') throw new Error(`expected REJECTED_BY_POLICY, got ${rejected.status}`);

  // 5. above the quorum threshold: two approvals; phone 2 is offline first
  say('▶ take the approver phone (mobile 2) offline');
  // a deliberate stop: the supervisor does not restart it
  await inst.mobiles[1]?.stop();
  const big = await step(
    'transfer 0.6 ETH (above the 0.5 ETH quorum threshold: 2 approvals needed)',
    async () =>
      (
        await call<TransferView>('POST', `${api}/transfers`, {
          headers: idem(),
          body: {
            wallet_id: wallet.wallet_id,
            destination_address: to,
            asset_id: state.eth_asset_id,
            amount: '0.6',
            external_id: 'demo-quorum',
          },
        })
      ).body,
    (t) => `transfer ${t.transfer_id}: ${t.status}`,
  );
  const waiting = await step(
    'it waits in PENDING_APPROVAL with one approval (the Admin phone approved)',
    () => until(big.transfer_id, (t) => t.status === 'PENDING_APPROVAL' && t.approvals_received >= 1, 'one approval'),
    (t) => `${t.status}: ${t.approvals_received} of ${t.approvals_required} approvals`,
  );
  await new Promise((r) => setTimeout(r, 3000));
  const still = await getTransfer(big.transfer_id);
  if (still.status !== 'PENDING_APPROVAL') throw new Error(`expected PENDING_APPROVAL, got ${still.status}`);
  say(`  ✔ 3 s later still ${still.status} (${still.approvals_received} of ${still.approvals_required})`);
  say('▶ the approver phone comes back online and approves with its PIN');
  inst.startMobile(1);
  await step(
    'second approval, signing, broadcast',
    () => until(big.transfer_id, (t) => t.status === 'SENT', 'SENT'),
    (t) => `SENT ${t.tx_hash ?? ''}`,
  );

  return {
    walletId: wallet.wallet_id,
    depositAddress: deposit,
    sentTransferId: created.transfer_id,
    txHash: (sent.tx_hash as string | null | undefined) ?? null,
    recipientDelta: delta,
    rejectedStatus: rejected.status,
    rejectedSubStatus: rejected.sub_status,
    quorumTransferId: big.transfer_id,
    quorumWaitedWithApprovals: waiting.approvals_received,
    events: inst.events.map((e) => e.event_type),
  };
}
