/**
 * The nonce of a new Ethereum transaction ({@link ethereumNonce}) against a real anvil and a real
 * PostgreSQL database, across the states the kill -9 sweep left behind: a stored nonce whose
 * transfer failed before broadcast (a gap), a SENT transaction the node holds but cannot mine yet
 * (queued behind that gap, or automine off), and a restart (each decision asks through a fresh
 * adapter, as a new process would: no in-process reservations). Each decision runs in the same
 * transaction that stores the transfer's unsigned transaction, as the pipeline does. Skipped when
 * no PostgreSQL server answers at TEST_DATABASE_URL.
 */
import { randomUUID } from 'node:crypto';
import { BroadcastError, EthereumAdapter } from '@custodian/chains';
import { hexToBytes } from '@noble/hashes/utils.js';
import { keccak256 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import type { Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import { ethereumNonce, type NonceNode } from '../src/transfers/eth-nonce.js';
import { openTestDb, postgresReachable } from './helpers.js';
import { jsonRpc } from './pipeline-harness.js';

// anvil's dev account 1 (a well-known test key, funded by anvil)
const sender = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const CHAIN = randomUUID();

let anvil: AnvilNode | undefined;
let drop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await anvil?.stop();
  anvil = undefined;
  await drop?.();
  drop = undefined;
});

async function setUp(ctx: { skip: () => void }): Promise<{ db: Db; node: AnvilNode }> {
  if (!(await postgresReachable())) ctx.skip();
  anvil = await startAnvil();
  const t = await openTestDb('postgres');
  drop = async () => {
    await t.db.close();
    await t.drop();
  };
  await migrate(t.db);
  return { db: t.db, node: anvil };
}

/** A fresh adapter per call: a restarted coordinator has none of the previous one's memory. */
const adapterOf = (node: AnvilNode) =>
  new EthereumAdapter({ id: 'ethereum-local', chainId: node.chainId, rpcUrl: node.url });

/** A transfer row of the sender with a stored unsigned transaction of `nonce` (foreign keys off: only the nonce matters). */
async function insertTransfer(
  q: Pick<Db, 'query'>,
  status: string,
  nonce: number,
  id: string = randomUUID(),
): Promise<string> {
  await q.query('SET LOCAL session_replication_role = replica');
  const now = new Date();
  await q.query(
    `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
       destination_address, amount, status, day, intent, intent_digest, unsigned, created_at, updated_at)
     VALUES ($1, $2, $2, $2, $3, $2, $4, $5, 1, $6, $7, '{}'::jsonb, 'x', $8::jsonb, $9, $9)`,
    [
      id,
      randomUUID(),
      CHAIN,
      sender.address,
      DEST,
      status,
      now.toISOString().slice(0, 10),
      JSON.stringify({ context: { nonce } }),
      now,
    ],
  );
  return id;
}

async function setStatus(db: Db, id: string, status: string): Promise<void> {
  await db.query('UPDATE transfers SET status = $2 WHERE transfer_id = $1', [id, status]);
}

/** Decide the nonce of a new transfer and store it (PENDING_SIGNATURE) in one transaction, as the pipeline does. */
async function decide(db: Db, node: AnvilNode): Promise<{ id: string; nonce: number }> {
  const id = randomUUID();
  const nonce = await db.tx(async (q) => {
    const n = await ethereumNonce(q, adapterOf(node).client as unknown as NonceNode, {
      transferId: id,
      sourceAddress: sender.address,
      blockchainId: CHAIN,
    });
    await insertTransfer(q, 'PENDING_SIGNATURE', n, id);
    return n;
  });
  return { id, nonce };
}

/** Sign a 1 wei transfer of `nonce` and broadcast it through the adapter. */
async function broadcast(node: AnvilNode, nonce: number): Promise<void> {
  const raw = await sender.signTransaction({
    type: 'eip1559',
    chainId: node.chainId,
    nonce,
    to: DEST,
    value: 1n,
    gas: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
  await adapterOf(node).broadcast({ chain: 'ethereum-local', rawTx: hexToBytes(raw.slice(2)), txid: keccak256(raw) });
}

/** The sender's mined transaction count once it reaches `want` (anvil mines right after answering), or what it is after 10 s. */
async function mined(node: AnvilNode, want: number): Promise<number> {
  let n = 0;
  for (let i = 0; i < 200; i++) {
    n = Number(await jsonRpc(node.url, 'eth_getTransactionCount', [sender.address, 'latest']));
    if (n >= want) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return n;
}

describe('Ethereum nonce decision (anvil + PostgreSQL)', () => {
  it('reuses the nonce of a transfer that failed before broadcast instead of leaving a gap', async (ctx) => {
    const { db, node } = await setUp(ctx);
    const failed = await db.tx((q) => insertTransfer(q, 'PENDING_SIGNATURE', 0));
    await db.tx((q) => insertTransfer(q, 'PENDING_SIGNATURE', 1));
    await setStatus(db, failed, 'FAILED'); // never broadcast: nonce 0 is free again
    const next = await decide(db, node);
    expect(next.nonce).toBe(0);
    await broadcast(node, 1);
    await broadcast(node, next.nonce);
    expect(await mined(node, 2)).toBe(2); // no gap: both mined
  });

  it('never reuses the nonce of a SENT transaction the node holds but cannot mine yet', async (ctx) => {
    const { db, node } = await setUp(ctx);
    const failed = await db.tx((q) => insertTransfer(q, 'PENDING_SIGNATURE', 0));
    const sent = await db.tx((q) => insertTransfer(q, 'READY_TO_SEND', 1));
    await setStatus(db, failed, 'FAILED');
    await broadcast(node, 1); // queued behind the gap at 0: the node's pending count stays 0
    await setStatus(db, sent, 'SENT');
    const a = await decide(db, node);
    expect(a.nonce).toBe(0);
    const b = await decide(db, node); // after a restart: a fresh adapter
    expect(b.nonce).toBe(2);
    await broadcast(node, a.nonce);
    await broadcast(node, b.nonce);
    expect(await mined(node, 3)).toBe(3);
  });

  it('automine off: SENT transactions in the pool are skipped, a failed transfer frees its nonce', async (ctx) => {
    const { db, node } = await setUp(ctx);
    await jsonRpc(node.url, 'evm_setAutomine', [false]);
    const t0 = await decide(db, node);
    expect(t0.nonce).toBe(0);
    await broadcast(node, t0.nonce);
    await setStatus(db, t0.id, 'SENT');
    const t1 = await decide(db, node);
    expect(t1.nonce).toBe(1);
    await setStatus(db, t1.id, 'FAILED'); // e.g. SIGNING_WINDOW_EXPIRED: never broadcast
    const t2 = await decide(db, node);
    expect(t2.nonce).toBe(1);
    const t3 = await decide(db, node);
    expect(t3.nonce).toBe(2);
    await broadcast(node, t2.nonce);
    await broadcast(node, t3.nonce);
    await jsonRpc(node.url, 'evm_mine', []);
    expect(await mined(node, 3)).toBe(3);
  });

  it('a broadcast refused by the node carries the node’s own reason', async (ctx) => {
    const { node } = await setUp(ctx);
    await broadcast(node, 0);
    expect(await mined(node, 1)).toBe(1);
    const err = await broadcast(node, 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BroadcastError);
    expect((err as BroadcastError).reason).toBe('nonce too low');
    expect((err as Error).message).toBe(
      'eth_sendRawTransaction: nonce too low (Transaction creation failed., RPC code -32003)',
    );
  });
});
