/**
 * Shared admin-API data fixtures for the dashboard component tests (the one copy; import what a
 * test needs). Ids are fixed UUIDs so assertions can name them. Amounts follow the API: `amount`
 * and `max_fee` are decimal strings, the `*_base_units` fields are base-unit integer strings.
 */

/** The profile every profile-scoped test signs into. */
export const P = '11111111-1111-4111-8111-111111111111';
/** A wallet of profile {@link P}. */
export const W1 = '22222222-2222-4222-8222-222222222222';
/** The Ethereum mainnet blockchain id. */
export const ETH = '44444444-4444-4444-8444-444444444444';
/** A transfer id. */
export const T1 = '77777777-7777-4777-8777-777777777777';
/** An asset id (ETH on {@link ETH}). */
export const ASSET = '88888888-8888-4888-8888-888888888888';

/** A Page envelope of `data` (page 1 of 20 rows; `total` defaults to the row count). */
export const pg = <T>(data: T[], total = data.length) => ({ data, page: 1, page_size: 20, total });

/**
 * Transfer {@link T1} of 1.000000000000000001 ETH from wallet {@link W1} (max fee 0.01 ETH) as the
 * admin API returns it, in `status` / `sub_status`.
 */
export const transfer = (status: string, sub: string | null) => ({
  transfer_id: T1,
  profile_id: P,
  wallet_id: W1,
  asset_id: ASSET,
  blockchain_id: ETH,
  source_address: '0x1111111111111111111111111111111111111111',
  destination_address: '0xabcdefabcdefabcdefabcdefabcdefabcdef1234',
  amount: '1.000000000000000001',
  amount_base_units: '1000000000000000001',
  max_fee: '0.01',
  max_fee_base_units: '10000000000000000',
  fee_currency: 'ETH',
  external_id: null,
  status,
  sub_status: sub,
  policy_id: null,
  policy_version: null,
  approvals_required: 1,
  approvals_received: 0,
  approval_deadline: null,
  tx_hash: null,
  fee_bump: null,
  created_at: '2026-11-20T10:00:00.000Z',
  updated_at: '2026-11-20T10:00:00.000Z',
  sent_at: null,
  delivered_at: null,
});
