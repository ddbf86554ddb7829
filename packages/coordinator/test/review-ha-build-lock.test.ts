/**
 * Review of issue #25 (hostile): the UTXO build lock (transfers/utxo-sources.ts
 * `withUtxoBuildLock`) is documented as exclusive across every coordinator process on the
 * database "from the moment it reads what is spendable until its choice is committed". It is a
 * session advisory lock on ONE pooled connection that sits idle while `fn` runs on other
 * connections; when that session ends (idle_session_timeout, a proxy or firewall dropping an idle
 * connection, pg_terminate_backend, a failover), PostgreSQL releases the lock, `Db.lock` aborts
 * its `signal` — and `withUtxoBuildLock` drops that signal: `fn` (buildStored: select outpoints,
 * then store them) keeps running and stores its choice while another replica already holds the
 * lock and selects the same outpoints. Expected: no second holder's `fn` runs while the first
 * one's is still running (or the first one must learn it lost the lock before it stores).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type Db, openPostgres } from '../src/db/db.js';
import { withUtxoBuildLock } from '../src/transfers/utxo-sources.js';
import { PG_URL, postgresReachable } from './helpers.js';

const pgUp = await postgresReachable();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function schemaWithTwoHandles(): Promise<[Db, Db, string]> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const a = await openPostgres(PG_URL, { schema, max: 4 });
  const b = await openPostgres(PG_URL, { schema, max: 4 });
  cleanups.push(async () => {
    await a.close();
    await b.close();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  });
  return [a, b, schema];
}

describe.skipIf(!pgUp)('review #25: UTXO build lock when the holding session ends', () => {
  it('two replicas never run a build of one wallet at the same time, even when the lock session drops', async () => {
    const [a, b, schema] = await schemaWithTwoHandles();
    const chain = 'litecoin-regtest';
    const wallet = '11111111-2222-3333-4444-555555555555';
    let inA = false;
    let overlap = false;
    let releaseA: () => void = () => {};
    const aHolds = new Promise<void>((r) => {
      releaseA = r;
    });
    let aEntered: () => void = () => {};
    const entered = new Promise<void>((r) => {
      aEntered = r;
    });
    // replica A: a build (select outpoints … store them) that takes a while
    const buildA = withUtxoBuildLock(a, chain, wallet, async () => {
      inA = true;
      aEntered();
      await aHolds;
      inA = false;
      return 'A stored its choice';
    });
    await entered;
    // the idle session holding A's advisory lock ends (a dropped idle connection, a timeout)
    const killer = new pg.Client({ connectionString: PG_URL });
    await killer.connect();
    // only the session holding THIS schema's lock (Db.lock's key: hashtextextended(schema/name, 0))
    const holders = await killer.query<{ pid: number }>(
      `WITH k AS (SELECT hashtextextended($1, 0) AS key)
       SELECT l.pid FROM pg_locks l, k WHERE l.locktype = 'advisory' AND l.granted
         AND l.classid::bigint = ((k.key >> 32) & 4294967295) AND l.objid::bigint = (k.key & 4294967295)`,
      [`${schema}/custodian.build:${chain}:${wallet}`],
    );
    expect(holders.rows.length).toBeGreaterThan(0);
    for (const h of holders.rows) await killer.query('SELECT pg_terminate_backend($1)', [h.pid]);
    await killer.end();
    // replica B: the next build of the same wallet
    const buildB = withUtxoBuildLock(b, chain, wallet, async () => {
      if (inA) overlap = true;
      return 'B stored its choice';
    });
    const bFirst = await Promise.race([
      buildB.then(() => 'B done'),
      new Promise<string>((r) => setTimeout(() => r('B waiting'), 2000)),
    ]);
    releaseA();
    await buildA;
    await buildB;
    // on integrate: B runs its whole build while A's is still running (both select the same outpoints)
    expect({ bFirst, overlap }).toEqual({ bFirst: 'B waiting', overlap: false });
  });
});
