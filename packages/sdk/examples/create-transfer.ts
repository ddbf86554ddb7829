// Send an amount from a wallet, exactly once even across crashes and restarts (see docs/integrator-guide.md).
import { CustodianApiError, createCustodianClient } from '@custodian/sdk';

const custody = createCustodianClient({
  baseUrl: process.env.CUSTODIAN_URL ?? 'https://custody.example.com',
  apiKey: process.env.CUSTODIAN_API_KEY,
});
const profile_id = process.env.CUSTODIAN_PROFILE_ID ?? '';
// Your order: store its idempotency key (a UUID) with it BEFORE the first call, and send the same key
// on every attempt — after a timeout, a crash or a restart, the retry returns the same transfer.
const order = {
  id: process.env.ORDER_ID ?? 'order-1',
  key: process.env.ORDER_IDEMPOTENCY_KEY ?? crypto.randomUUID(),
  wallet_id: process.env.WALLET_ID ?? '',
  destination: process.env.DESTINATION ?? '',
  amount: process.env.AMOUNT ?? '0.01', // decimal string in asset units, never a float
};

const { data: assets } = await custody.GET('/api/v1/profiles/{profile_id}/assets', {
  params: { path: { profile_id }, query: { page_size: 200 } },
});
const eth = assets.data.find((a) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH');
if (!eth) throw new Error('asset not enabled for this profile');

try {
  const { data: transfer, response } = await custody.POST('/api/v1/profiles/{profile_id}/transfers', {
    params: { path: { profile_id }, header: { 'idempotency-key': order.key } },
    body: {
      wallet_id: order.wallet_id,
      asset_id: eth.asset_id,
      destination_address: order.destination,
      amount: order.amount,
      external_id: order.id, // returned in every response and webhook about this transfer
    },
  });
  const replayed = response.headers.get('idempotent-replayed') === 'true';
  console.log(replayed ? 'already created' : 'created', transfer.transfer_id, transfer.status);
  console.log('fee cap', transfer.max_fee, transfer.fee_currency);
} catch (e) {
  // Error answers are thrown after the client's retries, with the API's stable code.
  if (!(e instanceof CustodianApiError)) throw e;
  if (e.code === 'VALIDATION_FAILED') {
    for (const f of e.fieldErrors) console.error(f.field, f.message); // fix the request, new key
  } else {
    console.error(e.status, e.code, e.problem?.detail);
  }
  throw e;
}
