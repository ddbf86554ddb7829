/**
 * The transfer state machine (packages/coordinator/src/transfers/machine.ts; STYLE.md item 23):
 * the table is consistent with the seed's statuses (§3) and with the events a move must emit; the
 * guarded `transition(from, to)` refuses an illegal move and a move from a status the row is not in
 * (`UPDATE … WHERE status = $from` matches nothing), leaving the row and the outbox unchanged; and
 * docs/transfers.md holds a table equal to TRANSITIONS.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allowedMove,
  canTransition,
  FAILURE_STATUSES,
  IllegalTransitionError,
  markDelivered,
  PIPELINE_STATUSES,
  TRANSFER_STATUSES,
  TRANSITIONS,
  TRANSITIONS_HEADER,
  type TransferStatus,
  TransitionLostError,
  transition,
  transitionsRows,
} from '../src/transfers/machine.js';
import { type Harness, startHarness } from './helpers.js';

const DOC = fileURLToPath(new URL('../../../docs/transfers.md', import.meta.url));

/** The markdown table whose header row is TRANSITIONS_HEADER, as rows of trimmed cells. */
function parseTransitionsTable(markdown: string): string[][] {
  const lines = markdown.split('\n');
  const cells = (l: string) =>
    l
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  const start = lines.findIndex(
    (l) => l.trim().startsWith('|') && JSON.stringify(cells(l)) === JSON.stringify([...TRANSITIONS_HEADER]),
  );
  if (start < 0) return [];
  const rows: string[][] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.trim().startsWith('|')) break;
    rows.push(cells(l));
  }
  return rows;
}

describe('the table', () => {
  it('names only the seed statuses; terminal failures have no way out; every move into one emits TRANSFER_FAILED', () => {
    const seed = new Set<string>(TRANSFER_STATUSES);
    for (const m of TRANSITIONS) {
      expect(seed.has(m.from) && seed.has(m.to), `${m.from} → ${m.to}`).toBe(true);
      const failing = FAILURE_STATUSES.includes(m.to);
      expect(m.events.includes('TRANSFER_FAILED'), `${m.from} → ${m.to} emits TRANSFER_FAILED`).toBe(failing);
    }
    for (const s of FAILURE_STATUSES) expect(TRANSITIONS.filter((m) => m.from === s)).toEqual([]);
    // every status is reachable from PENDING
    const seen = new Set<TransferStatus>(['PENDING']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const m of TRANSITIONS)
        if (seen.has(m.from) && !seen.has(m.to)) {
          seen.add(m.to);
          grew = true;
        }
    }
    expect([...seen].sort()).toEqual([...TRANSFER_STATUSES].sort());
  });

  it('canTransition and allowedMove refuse what the table does not list', () => {
    expect(canTransition('PENDING_APPROVAL', 'PENDING_SIGNATURE')).toBe(true);
    expect(canTransition('SENT', 'PENDING_SIGNATURE')).toBe(false);
    expect(canTransition('FAILED', 'PENDING_SIGNATURE')).toBe(false);
    expect(canTransition('PENDING_APPROVAL', 'READY_TO_SEND')).toBe(false);
    expect(allowedMove('PENDING_APPROVAL', 'EXPIRED', 'APPROVAL_EXPIRED')).toBeDefined();
    expect(allowedMove('PENDING_APPROVAL', 'EXPIRED', 'SIGNING_FAILED')).toBeUndefined();
    expect(allowedMove('PENDING_SIGNATURE', 'REJECTED', 'DIGEST_MISMATCH')?.by).toBe('pipeline');
    expect(allowedMove('PENDING_SIGNATURE', 'REJECTED', null)).toBeUndefined();
  });

  it('the pipeline has a step for exactly the statuses it moves transfers out of', () => {
    const fromPipeline = new Set(TRANSITIONS.filter((m) => m.by === 'pipeline').map((m) => m.from));
    expect([...fromPipeline].sort()).toEqual([...PIPELINE_STATUSES].sort());
  });

  it('docs/transfers.md holds a table equal to TRANSITIONS', () => {
    const doc = readFileSync(DOC, 'utf8');
    expect(parseTransitionsTable(doc)).toEqual(transitionsRows());
  });

  it('the doc check fails when a row is removed from the doc', () => {
    const doc = readFileSync(DOC, 'utf8');
    const [, , row] = transitionsRows()[5]!;
    const lines = doc.split('\n');
    const i = lines.findIndex((l) => l.includes('| PENDING_APPROVAL') && l.includes(row!));
    expect(i).toBeGreaterThan(0);
    lines.splice(i, 1);
    expect(parseTransitionsTable(lines.join('\n'))).not.toEqual(transitionsRows());
  });
});

describe('the guarded transition in SQL', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ masterKey: false, coordinator: { transfers: { runPipeline: false } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A transfer row in `status` (foreign keys off: only the machine's columns matter). */
  async function insert(status: TransferStatus): Promise<string> {
    const id = randomUUID();
    const asset = (
      await h.c.db.query<{ asset_id: string; blockchain_id: string }>(
        `SELECT a.asset_id, a.blockchain_id FROM assets a JOIN blockchains b USING (blockchain_id)
         WHERE b.key = 'ethereum-local' AND a.contract_address IS NULL`,
      )
    )[0]!;
    await h.c.db.tx(async (q) => {
      await q.query('SET LOCAL session_replication_role = replica');
      const now = new Date();
      await q.query(
        `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
           destination_address, amount, status, day, intent, intent_digest, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $3, '0xa', '0xb', 1, $6, $7, $8::jsonb, 'x', $9, $9)`,
        [
          id,
          h.profileId,
          randomUUID(),
          asset.asset_id,
          asset.blockchain_id,
          status,
          now.toISOString().slice(0, 10),
          JSON.stringify({ blockchain: 'ethereum-local', max_fee: '1000' }),
          now,
        ],
      );
    });
    return id;
  }

  const row = async (id: string) =>
    (
      await h.c.db.query<{ status: string; sub_status: string | null; updated_at: Date }>(
        'SELECT status, sub_status, updated_at FROM transfers WHERE transfer_id = $1',
        [id],
      )
    )[0];
  const events = async (id: string) =>
    (
      await h.c.db.query<{ event_type: string }>(`SELECT event_type FROM webhook_events WHERE body::text LIKE $1`, [
        `%${id}%`,
      ])
    )
      .map((e) => e.event_type)
      .sort();
  const clock = () => new Date();

  it('an illegal move (SENT → PENDING_SIGNATURE) is refused and the row is unchanged', async () => {
    const id = await insert('SENT');
    const before = await row(id);
    const err = await h.c.db
      .tx((q) => transition(q, { clock }, id, 'SENT', 'PENDING_SIGNATURE', null))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IllegalTransitionError);
    expect((err as IllegalTransitionError).code).toBe('ILLEGAL_TRANSITION');
    expect((err as IllegalTransitionError).family).toBe('coordinator');
    expect(await row(id)).toEqual(before);
    expect(await events(id)).toEqual([]);
  });

  it('a move from a status the row is not in is refused by SQL (TRANSITION_LOST) and the row is unchanged', async () => {
    const id = await insert('SENT');
    const before = await row(id);
    // legal in the table, but the row is SENT, not PENDING_APPROVAL: WHERE status = $from matches nothing
    const err = await h.c.db
      .tx((q) => transition(q, { clock }, id, 'PENDING_APPROVAL', 'EXPIRED', 'APPROVAL_EXPIRED'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransitionLostError);
    expect((err as TransitionLostError).code).toBe('TRANSITION_LOST');
    expect(await row(id)).toEqual(before);
    expect(await events(id)).toEqual([]);
  });

  it('a legal move from the row status is written with its events; a second identical one is lost', async () => {
    const id = await insert('PENDING_APPROVAL');
    const v = await h.c.db.tx((q) => transition(q, { clock }, id, 'PENDING_APPROVAL', 'EXPIRED', 'APPROVAL_EXPIRED'));
    expect([v.status, v.sub_status]).toEqual(['EXPIRED', 'APPROVAL_EXPIRED']);
    expect(await row(id)).toMatchObject({ status: 'EXPIRED', sub_status: 'APPROVAL_EXPIRED' });
    expect(await events(id)).toEqual(['TRANSFER_FAILED', 'TRANSFER_UPDATED']);
    const again = await h.c.db
      .tx((q) => transition(q, { clock }, id, 'PENDING_APPROVAL', 'EXPIRED', 'APPROVAL_EXPIRED'))
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TransitionLostError);
    expect(await events(id)).toHaveLength(2);
  });

  it('the confirmation is recorded once, and only for a SENT transfer', async () => {
    const sent = await insert('SENT');
    const notSent = await insert('READY_TO_SEND');
    expect(await h.c.db.tx((q) => markDelivered(q, { clock }, notSent, '0x1', {}))).toBe(false);
    expect(await h.c.db.tx((q) => markDelivered(q, { clock }, sent, '0x1', { block_number: 7 }))).toBe(true);
    expect(await h.c.db.tx((q) => markDelivered(q, { clock }, sent, '0x1', { block_number: 7 }))).toBe(false);
    expect(await events(sent)).toEqual(['TRANSFER_DELIVERED']);
    expect(await events(notSent)).toEqual([]);
  });
});
