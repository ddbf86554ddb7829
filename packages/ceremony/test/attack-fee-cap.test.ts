/**
 * Issue #20 item 3 (fees, signer side), as a compromised coordinator: the fee a transaction can
 * pay must stay within the cap the approvers signed (`intent.max_fee`, FEE_ABOVE_CAP) and within
 * the signer's own per-blockchain ceiling (FEE_ABOVE_CEILING). EVM: gas × maxFeePerGas; TRON:
 * fee_limit of a TRC-20 call; Bitcoin family: inputs − outputs. A fee bump above the approved cap
 * is a "raised cap" intent (only `max_fee` higher) approved afresh, with the same replacement key.
 */
import { tronAddress } from '@custodian/chains';
import { signApproval } from '@custodian/wire';
import { describe, expect, it } from 'vitest';
import { ledgerEntry } from '../src/index.js';
import {
  child,
  dev1,
  dev2,
  ethContext,
  intent,
  ltcContext,
  ltcIntent,
  mk,
  request,
  signAndCommit,
  TRON_DEST,
  TRON_USDT,
  tempStore,
  tronContext,
  utxoInput,
  verdict,
} from './attack-fixtures.js';

const store = tempStore('attack-fee');

const ETH = [44, 60, 0, 0, 0];
const TRX = [44, 1, 0, 0, 0]; // Nile: a test network, coin type 1

describe('attack: fees above the approved cap or the signer ceiling', () => {
  it('EVM: gas × maxFeePerGas above intent.max_fee is FEE_ABOVE_CAP, above the ceiling FEE_ABOVE_CEILING', async () => {
    // cap 0.001 ETH; 21000 gas × 100 gwei = 0.0021 ETH
    const i = intent({ max_fee: '1000000000000000' });
    expect(await verdict(store(), request(i, ethContext(ETH, { maxFeePerGas: '100000000000' })))).toBe('FEE_ABOVE_CAP');
    // within the cap: accepted
    expect(await verdict(store(), request(intent({ max_fee: '1000000000000000' }), ethContext(ETH)))).toBe('ACCEPTED');
    // approvers signed a 1 ETH cap, the signer's own ceiling is 0.01 ETH: 0.021 ETH refused
    const j = intent({ max_fee: '1000000000000000000' });
    expect(await verdict(store(), request(j, ethContext(ETH, { maxFeePerGas: '1000000000000' })))).toBe(
      'FEE_ABOVE_CEILING',
    );
  });

  it('Bitcoin family: a 0.001 LTC transfer spending a 10 LTC coin with no change (9.999 LTC fee) is FEE_ABOVE_CAP', async () => {
    const i = ltcIntent();
    const src = [...i.derivation_path];
    expect(
      await verdict(store(), request(i, ltcContext(i, [utxoInput(child(mk.ecdsa, src), src, 1_000_000_000n)], null))),
    ).toBe('FEE_ABOVE_CAP');
    // cap raised by the approvers to 20 LTC: the signer's ceiling (0.01 LTC) still refuses
    const j = ltcIntent({ max_fee: '2000000000' });
    expect(
      await verdict(store(), request(j, ltcContext(j, [utxoInput(child(mk.ecdsa, src), src, 1_000_000_000n)], null))),
    ).toBe('FEE_ABOVE_CEILING');
  });

  it('TRON: a TRC-20 fee_limit above intent.max_fee is FEE_ABOVE_CAP, above the ceiling FEE_ABOVE_CEILING', async () => {
    const trc20 = (maxFee: string) =>
      intent({
        blockchain: 'tron-nile',
        asset_symbol: 'USDT',
        asset_decimals: 6,
        asset_contract: TRON_USDT,
        source_address: tronAddress(child(mk.ecdsa, TRX)),
        destination_address: TRON_DEST,
        derivation_path: TRX,
        max_fee: maxFee,
      });
    expect(await verdict(store(), request(trc20('30000000'), tronContext(TRX, { feeLimit: '30000000' })))).toBe(
      'ACCEPTED',
    );
    expect(await verdict(store(), request(trc20('30000000'), tronContext(TRX, { feeLimit: '90000000' })))).toBe(
      'FEE_ABOVE_CAP',
    );
    expect(await verdict(store(), request(trc20('500000000'), tronContext(TRX, { feeLimit: '400000000' })))).toBe(
      'FEE_ABOVE_CEILING',
    );
  });

  it('fee bump: a raised-cap intent with fresh approvals replaces the transaction; anything else stays TRANSFER_ALREADY_SIGNED', async () => {
    const i = intent({ max_fee: '100000000000000', created_at: '2026-09-01T00:00:00.000Z' }); // 0.0001 ETH cap
    const ctx = ethContext(ETH, { nonce: 41, maxFeePerGas: '4000000000' }); // 0.000084 ETH
    await signAndCommit(store(), request(i, ctx));
    // the bump (10 gwei → 0.00021 ETH) exceeds the approved cap
    const bumped = ethContext(ETH, { nonce: 41, maxFeePerGas: '10000000000' });
    expect(await verdict(store(), request(i, bumped))).toBe('FEE_ABOVE_CAP');
    // the coordinator asks for a raised cap, approved afresh: accepted, same transfer, same nonce
    const raised = { ...i, max_fee: '1000000000000000' };
    const fresh = [signApproval(raised, 'APPROVE', 'dev-2', dev2, '2026-09-01T00:10:00.000Z')];
    expect(await verdict(store(), request(raised, bumped, fresh))).toBe('ACCEPTED');
    // the same raised cap for another nonce (a second transaction), or with another amount, or a lower cap: refused
    expect(
      await verdict(store(), request(raised, ethContext(ETH, { nonce: 42, maxFeePerGas: '10000000000' }), fresh)),
    ).toBe('TRANSFER_ALREADY_SIGNED');
    const more = { ...raised, amount: '101' };
    expect(
      await verdict(
        store(),
        request(more, bumped, [signApproval(more, 'APPROVE', 'dev-2', dev2, '2026-09-01T00:11:00.000Z')]),
      ),
    ).toBe('TRANSFER_ALREADY_SIGNED');
    const lower = { ...i, max_fee: '90000000000000' };
    expect(
      await verdict(
        store(),
        request(lower, ethContext(ETH, { nonce: 41, maxFeePerGas: '3000000000' }), [
          signApproval(lower, 'APPROVE', 'dev-2', dev2, '2026-09-01T00:12:00.000Z'),
        ]),
      ),
    ).toBe('TRANSFER_ALREADY_SIGNED');
    // commit the raised-cap replacement; the entry now carries the raised cap, the amount once
    await signAndCommit(store(), request(raised, bumped, fresh));
    const entry = await ledgerEntry(store(), raised);
    expect(entry?.digests.length).toBe(2);
    expect(entry?.amount).toBe('100');
    // re-using the approval of the raised cap for yet another bump: refused (fresh approvals needed)
    const again = ethContext(ETH, { nonce: 41, maxFeePerGas: '20000000000' });
    expect(await verdict(store(), request(raised, again, fresh))).toBe('INSUFFICIENT_APPROVALS');
    expect(
      await verdict(
        store(),
        request(raised, again, [signApproval(raised, 'APPROVE', 'dev-1', dev1, '2026-09-01T00:20:00.000Z')]),
      ),
    ).toBe('ACCEPTED');
  });
});
