/**
 * `custodian dev`: run a local demonstration of the threshold core, in one process, with the real
 * protocol state machines — until the full local instance (coordinator, signer processes, mobile
 * simulators, a local Ethereum node) replaces it.
 *
 * What it does: a 3-of-4 FROST DKG on Ed25519 and on secp256k1 (Taproot), each with a jointly
 * random chain code; a signature by 3 of the 4 parties under the master key and under an HD-derived
 * child key (Ed25519), and a BIP341 key-path signature (Taproot); every signature is checked with
 * an independent verifier (noble's `ed25519.verify` / `schnorr.verify`).
 */
import { performance } from 'node:perf_hooks';
import { bytesToHex, deriveEd25519, Party, simulate, systemRandom } from '@custodian/crypto';
import { dkgProtocol, type KeyShare, type SuiteName, signProtocol } from '@custodian/frost';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import type { Command } from 'commander';

const N = 4;
const T = 3;

function step(label: string): (outcome: string) => void {
  const t0 = performance.now();
  process.stdout.write(`• ${label} … `);
  return (outcome) => process.stdout.write(`${outcome} (${Math.round(performance.now() - t0)} ms)\n`);
}

function dkg(suite: SuiteName): KeyShare[] {
  const sessionId = systemRandom(32);
  const parties = Array.from(
    { length: N },
    (_, i) => new Party(dkgProtocol({ suite, threshold: T }), { self: i, n: N, sessionId, rng: systemRandom }),
  );
  const res = simulate(parties);
  const failed = res.aborted.find(Boolean);
  if (failed) throw new Error(`DKG aborted: ${failed.reason}`);
  return res.outputs as KeyShare[];
}

function sign(
  shares: readonly KeyShare[],
  signerIdx: readonly number[],
  message: Uint8Array,
  extra: { derivationPath?: string; taproot?: { merkleRoot: Uint8Array } } = {},
) {
  const sessionId = systemRandom(32);
  const signers = signerIdx.map((i) => (shares[i] as KeyShare).identifier);
  const parties = signerIdx.map(
    (i, pos) =>
      new Party(signProtocol({ keyShare: shares[i] as KeyShare, signers, message, ...extra }), {
        self: pos,
        n: signerIdx.length,
        sessionId,
        rng: systemRandom,
      }),
  );
  const res = simulate(parties);
  const failed = res.aborted.find(Boolean);
  if (failed) throw new Error(`signing aborted: ${failed.reason}`);
  const out = res.outputs[0];
  if (!out) throw new Error('signing produced no output');
  return out;
}

/** Run the demonstration; returns false if any verification failed. */
export function runDevDemo(): boolean {
  let ok = true;
  const check = (label: string, good: boolean) => {
    ok &&= good;
    return `${label}: ${good ? 'verified' : 'VERIFICATION FAILED'}`;
  };
  console.log(`Custodian dev — threshold core demo (${T}-of-${N}, four parties in one process)\n`);
  let done = step('FROST DKG, Ed25519');
  const ed = dkg('ed25519');
  const edKey = (ed[0] as KeyShare).groupPublicKey;
  done(`group key ${bytesToHex(edKey)}`);

  done = step('FROST DKG, secp256k1 (Taproot)');
  const tr = dkg('secp256k1-tr');
  done(`internal key ${bytesToHex((tr[0] as KeyShare).groupPublicKey)}`);

  const message = new TextEncoder().encode('custodian dev: hello, threshold world');
  done = step('Ed25519 signature by parties 1, 2, 4');
  const s1 = sign(ed, [0, 1, 3], message);
  done(check('ed25519.verify', ed25519.verify(s1.signature, message, edKey)));

  const path = 'm/44/501/0/0/1';
  done = step(`Ed25519 signature under the HD child ${path} by parties 2, 3, 4`);
  const child = deriveEd25519(edKey, (ed[0] as KeyShare).chainCode, path);
  const s2 = sign(ed, [1, 2, 3], message, { derivationPath: path });
  done(
    check(
      `ed25519.verify under child key ${bytesToHex(child.publicKey).slice(0, 16)}…`,
      bytesToHex(s2.verifyingKey) === bytesToHex(child.publicKey) &&
        ed25519.verify(s2.signature, message, child.publicKey),
    ),
  );

  done = step('BIP340 Taproot key-path signature (BIP341 tweak, empty script tree) by parties 1, 3, 4');
  const sighash = systemRandom(32);
  const s3 = sign(tr, [0, 2, 3], sighash, { taproot: { merkleRoot: new Uint8Array(0) } });
  done(check('schnorr.verify under the tweaked output key', schnorr.verify(s3.signature, sighash, s3.verifyingKey)));

  console.log(
    `\n${ok ? 'All signatures verified.' : 'Some verification failed.'} No process held a whole private key: each party kept only its share.`,
  );
  console.log(
    'The full local instance (coordinator API, signer processes, mobile simulators, anvil) arrives with the e2e work.',
  );
  return ok;
}

/** Register `custodian dev`. */
export function registerDevCommand(program: Command): void {
  program
    .command('dev')
    .description('run a local demonstration: threshold key generation and signatures, verified independently')
    .action(() => {
      if (!runDevDemo()) process.exitCode = 1;
    });
}
