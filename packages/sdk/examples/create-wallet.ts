// Create a wallet and print its deposit address (run: see docs/integrator-guide.md).
import { createCustodianClient } from '@custodian/sdk';

const custody = createCustodianClient({
  baseUrl: process.env.CUSTODIAN_URL ?? 'https://custody.example.com',
  apiKey: process.env.CUSTODIAN_API_KEY, // cst_…, scoped to one profile
});
const profile_id = process.env.CUSTODIAN_PROFILE_ID ?? '';

// The directory's ids are stable UUIDs on every instance; look one up by its key.
const { data: chains } = await custody.GET('/api/v1/profiles/{profile_id}/blockchains', {
  params: { path: { profile_id }, query: { page_size: 200 } },
});
const ethereum = chains.data.find((b) => b.key === (process.env.CUSTODIAN_BLOCKCHAIN ?? 'ethereum-mainnet'));
if (!ethereum) throw new Error('blockchain not enabled for this profile');

// A create: the client adds the Idempotency-Key and retries safely with it.
const { data: wallet } = await custody.POST('/api/v1/profiles/{profile_id}/wallets', {
  params: { path: { profile_id } },
  body: { blockchain_ids: [ethereum.blockchain_id], name: 'treasury' },
});
console.log('wallet', wallet.wallet_id, 'deposit address', wallet.addresses[0]?.address);

const { data: balances } = await custody.GET('/api/v1/profiles/{profile_id}/wallets/{wallet_id}/balances', {
  params: { path: { profile_id, wallet_id: wallet.wallet_id } },
});
for (const b of balances.data) console.log(b.symbol, b.amount);
