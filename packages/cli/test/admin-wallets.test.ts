/**
 * `custodian admin wallets …` lifecycle commands against a real coordinator (PGlite, pipeline
 * off): addresses with labels, address archival (refused on an account chain's only address),
 * wallet archive / unarchive / delete, UTXO consolidation's refusal without enough UTXOs, and the
 * fee bump's `--method` check — each answer as the admin API gives it, each refusal as its
 * problem code with exit code 1.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockchainId } from '../../coordinator/src/directory.js';
import { type Harness, type Json, startHarness } from '../../coordinator/test/helpers.js';
import { runAdmin } from './admin-cli.js';

const ETH = blockchainId('ethereum-sepolia');
const LTC = blockchainId('litecoin-regtest');
let h: Harness;

async function wallet(chains: string[]): Promise<Json> {
  const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
    key: h.apiKey,
    headers: { 'Idempotency-Key': randomUUID() },
    body: { blockchain_ids: chains },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

const cli = (...args: string[]) =>
  runAdmin(h.dir, ['--coordinator-url', h.url, '--token', h.adminToken, '--json'], args);

beforeAll(async () => {
  h = await startHarness({ coordinator: { transfers: { runPipeline: false } } });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('custodian admin wallets (lifecycle)', () => {
  it('addresses: list, label, clear; archiving the only address of an account chain is refused', async () => {
    const w = await wallet([ETH]);
    const list = await cli('wallets', 'addresses', h.profileId, w.wallet_id);
    expect(list.code, list.err).toBe(0);
    const [a] = JSON.parse(list.out).data;
    expect(a).toMatchObject({ address: w.addresses[0].address, label: null, archived_at: null });
    const labelled = await cli('wallets', 'address', h.profileId, w.wallet_id, a.address_id, '--label', 'hot');
    expect(labelled.code, labelled.err).toBe(0);
    expect(JSON.parse(labelled.out).label).toBe('hot');
    const cleared = await cli('wallets', 'address', h.profileId, w.wallet_id, a.address_id, '--clear-label');
    expect(JSON.parse(cleared.out).label).toBeNull();
    const archived = await cli('wallets', 'address', h.profileId, w.wallet_id, a.address_id, '--archive');
    expect(archived.code).toBe(1);
    expect(archived.err).toContain('ADDRESS_NOT_ARCHIVABLE');
    const nothing = await cli('wallets', 'address', h.profileId, w.wallet_id, a.address_id);
    expect(nothing.code).toBe(1);
    expect(nothing.err).toContain('nothing to change');
  });

  it('archive, unarchive and delete an empty wallet; a deleted wallet is gone', async () => {
    const w = await wallet([ETH]);
    const archived = await cli('wallets', 'archive', h.profileId, w.wallet_id);
    expect(archived.code, archived.err).toBe(0);
    expect(JSON.parse(archived.out).archived_at).not.toBeNull();
    const back = await cli('wallets', 'unarchive', h.profileId, w.wallet_id);
    expect(JSON.parse(back.out).archived_at).toBeNull();
    const deleted = await cli('wallets', 'delete', h.profileId, w.wallet_id);
    expect(deleted.code, deleted.err).toBe(0);
    expect(JSON.parse(deleted.out)).toEqual({ wallet_id: w.wallet_id, deleted: true });
    const gone = await cli('wallets', 'show', h.profileId, w.wallet_id);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain('WALLET_NOT_FOUND');
  });

  it('consolidate without two qualifying UTXOs is refused with the problem code; fee-bump --method is checked', async () => {
    const w = await wallet([LTC]);
    const r = await cli('wallets', 'consolidate', h.profileId, w.wallet_id, '--blockchain', 'litecoin-regtest');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/VALIDATION_FAILED|CHAIN_UNAVAILABLE/);
    const bad = await cli('transfers', 'fee-bump', h.profileId, randomUUID(), '--method', 'XYZ');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('--method: RBF or CPFP');
  });
});
