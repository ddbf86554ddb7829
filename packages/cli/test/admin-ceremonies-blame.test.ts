/**
 * `custodian admin ceremonies show ID` (issue #23 part 3): the outcome of a signing ceremony and
 * every blame as the coordinator checked it — per blame the proven culprit by name ('—' for an
 * unverified blame: nobody is named), check, round, verified yes/no, accuser, detail, then one line
 * per unverified blame "unverified: <accuser> accuses <claimed> of <check>"; `--json` the API answer.
 * A real coordinator (PGlite, HTTP), the real attempt log and blame store; the blames are checked
 * by the coordinator's `assessBlames` from results carrying real evidence (Ed25519 statements).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { fingerprint } from '@custodian/signer-client';
import { Outcome } from '@custodian/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessBlames } from '../../coordinator/src/signing/blame.js';
import { BlameStore } from '../../coordinator/src/signing/blame-store.js';
import { PresignaturePool } from '../../coordinator/src/signing/presignature-pool.js';
import { blameBy, identity } from '../../coordinator/test/blame-fixtures.js';
import { type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { runAdmin } from './admin-cli.js';

const A = identity(); // accuser
const H = identity(); // honest, accused without evidence
const C = identity(); // culprit, proven by its own signed statements
const SESSION = [A, H, C];

let h: Harness;
let ceremonyId = '';
beforeAll(async () => {
  h = await startHarness({ coordinator: { webhooks: { runWorker: false } } });
  for (const [i, name] of [
    [A, 'accuser-signer'],
    [H, 'honest-signer'],
    [C, 'culprit-signer'],
  ] as const) {
    const r = await h.req('POST', '/admin/v1/signers', {
      token: h.adminToken,
      body: { name, peer_id: i.peerId, address: '/ip4/127.0.0.1/tcp/7400', fingerprint: fingerprint(i.pub) },
    });
    expect(r.status).toBe(201);
  }
  const id = Uint8Array.from(randomBytes(24));
  ceremonyId = bytesToHex(id);
  const pool = new PresignaturePool({
    db: h.c.db,
    masterKeys: { listMasterKeys: async () => [] },
    presign: async () => ({ ok: false, error: 'not used' }),
    options: { target: 0, reconcileMs: 0 },
  });
  const attempt = {
    ceremonyId,
    keyId: 'k1',
    algorithm: 'ED25519' as const,
    parties: SESSION.map((_, n) => ({ kind: 'server' as const, id: `s${n}` })),
    transferId: null,
    pooled: false,
  };
  await pool.begin(attempt);
  await pool.finish(attempt, 'ABORTED');
  const o = { session: SESSION, ceremonyId: id, protocol: 'custodian.frost.sign', label: 'frost.sign' };
  const records = assessBlames(
    id,
    SESSION.map((i) => i.peerId),
    [
      {
        peerId: A.peerId,
        result: {
          ceremonyId: id,
          outcome: Outcome.ABORTED,
          blame: [blameBy({ ...o, culprit: H }), blameBy({ ...o, culprit: C }, C)],
        },
      },
    ],
  );
  await new BlameStore({ db: h.c.db, clock: () => new Date() }).save(ceremonyId, 'sign', records);
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const cli = (...args: string[]) =>
  runAdmin(
    h.dir,
    ['--coordinator-url', h.url, '--session-file', join(h.dir, 'none.json'), '--token', h.adminToken],
    args,
  );

describe('custodian admin ceremonies show', () => {
  it('prints the outcome and, per blame, the culprit (— when unverified), check, round, verified, accuser, detail', async () => {
    const r = await cli('ceremonies', 'show', ceremonyId);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^outcome: ABORTED$/m);
    const lines = r.out.split('\n');
    const proven = lines.find((l) => l.includes('culprit-signer'));
    expect(proven).toMatch(new RegExp(`culprit-signer \\(${C.peerId}\\)\\s+echo\\.equivocation\\s+1\\s+yes\\s`));
    expect(proven).toMatch(/two different statements of round 1 signed by the culprit/);
    // the unverified blame: its table row names no culprit ('—'), only the accuser
    const unverified = lines.find((l) => /^—\s/.test(l));
    expect(unverified).toMatch(/^—\s+check\.unspecified\s+0\s+no\s+accuser-signer \(/);
    expect(unverified).toMatch(/no evidence/);
    // and a dispute line: the accuser accuses the claimed party, neither named culprit
    expect(lines).toContain(
      `unverified: accuser-signer (${A.peerId}) accuses honest-signer (${H.peerId}) of check.unspecified`,
    );
    // the honest signer appears only in that line, never as a culprit
    expect(lines.filter((l) => l.includes('honest-signer'))).toEqual([
      `unverified: accuser-signer (${A.peerId}) accuses honest-signer (${H.peerId}) of check.unspecified`,
    ]);
  });

  it('--json gives the API answer', async () => {
    const r = await cli('--json', 'ceremonies', 'show', ceremonyId);
    expect(r.code, r.err).toBe(0);
    const v = JSON.parse(r.out);
    expect(v).toMatchObject({ ceremony_id: ceremonyId, kind: 'sign', outcome: 'ABORTED' });
    expect(v.blame.map((b: { culprit: string | null; verified: boolean }) => [b.culprit, b.verified])).toEqual([
      [null, false],
      [C.peerId, true],
    ]);
  });
});
