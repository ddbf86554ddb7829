/**
 * The policy editor of the policies screen: name, scope (wallets, blockchain, asset — from the
 * profile's wallets, blockchains and assets), whitelist (one address per line), per-transaction
 * and daily limits and the approval quorum above an amount. Amounts are base-unit integer strings
 * (digits only, as the API takes them); the help text shows them in whole units of the selected
 * asset by string arithmetic ({@link formatBaseUnits}), never floating point. "Save draft" sends
 * `POST …/policies` (new) or `PUT …/policies/{id}` (a new version), which awaits an Admin's phone.
 */
import type {
  Asset,
  Blockchain,
  Page,
  Policy,
  PolicyInput,
  WalletSummary,
} from '@custodian/coordinator/admin-api-types';
import { Button, Group, MultiSelect, NumberInput, Select, SimpleGrid, Stack, Textarea, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery } from '@tanstack/react-query';
import { api, call } from '../../api/client';
import { ProblemAlert } from '../../components/states';

/** A base-unit amount as the API takes it: a non-negative integer without leading zeros. */
export const BASE_UNITS = /^(0|[1-9][0-9]{0,77})$/;

/**
 * `baseUnits` (integer string) in whole units of an asset with `decimals` decimals, as a decimal
 * string without trailing zeros (`formatBaseUnits('1500000', 6)` → `'1.5'`). String arithmetic only.
 */
export function formatBaseUnits(baseUnits: string, decimals: number): string {
  if (decimals <= 0) return baseUnits;
  const padded = baseUnits.padStart(decimals + 1, '0');
  const whole = padded.slice(0, padded.length - decimals).replace(/^0+(?=\d)/, '');
  const frac = padded.slice(padded.length - decimals).replace(/0+$/, '');
  return frac === '' ? whole : `${whole}.${frac}`;
}

interface Values {
  name: string;
  wallet_ids: string[];
  blockchain: string | null;
  asset_id: string | null;
  whitelist: string;
  per_transaction_limit: string;
  daily_limit: string;
  quorum: number | string;
  above_amount: string;
}

/** Form values → the API body (empty limit: none; no wallet chosen: every wallet). */
export function toPolicyInput(v: Values): PolicyInput {
  return {
    name: v.name.trim(),
    scope: {
      wallet_ids: v.wallet_ids.length === 0 ? null : v.wallet_ids,
      blockchain: v.blockchain,
      asset_id: v.asset_id,
    },
    whitelist: v.whitelist
      .split('\n')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    per_transaction_limit: v.per_transaction_limit.trim() === '' ? null : v.per_transaction_limit.trim(),
    daily_limit: v.daily_limit.trim() === '' ? null : v.daily_limit.trim(),
    approvals: { quorum: Number(v.quorum), above_amount: v.above_amount.trim() },
  };
}

function fromPolicy(p: Policy | null): Values {
  const d = p?.versions[0]?.document;
  return {
    name: p?.name ?? '',
    wallet_ids: d?.scope.wallet_ids ? [...d.scope.wallet_ids] : [],
    blockchain: d?.scope.blockchain ?? null,
    asset_id: d?.scope.asset_id ?? null,
    whitelist: d ? d.whitelist.join('\n') : '',
    per_transaction_limit: d?.per_transaction_limit ?? '',
    daily_limit: d?.daily_limit ?? '',
    quorum: d?.approvals.quorum ?? 1,
    above_amount: d?.approvals.above_amount ?? '0',
  };
}

const amount = (optional: boolean) => (v: string) =>
  (optional && v.trim() === '') || BASE_UNITS.test(v.trim()) ? null : 'Digits only: an amount in base units';

/**
 * Create (`policy` null) or edit a policy; `onSaved(policy)` gets the answer (its newest version
 * is the draft awaiting signature).
 */
export function PolicyEditor({
  profileId,
  policy,
  onSaved,
  onCancel,
}: {
  profileId: string;
  policy: Policy | null;
  onSaved: (p: Policy) => void;
  onCancel: () => void;
}) {
  const form = useForm<Values>({
    initialValues: fromPolicy(policy),
    validate: {
      name: (v) => (v.trim() === '' ? 'A name is required' : null),
      per_transaction_limit: amount(true),
      daily_limit: amount(true),
      above_amount: amount(false),
      quorum: (v) => (Number.isInteger(Number(v)) && Number(v) >= 1 && Number(v) <= 16 ? null : 'From 1 to 16'),
    },
  });
  const path = { profile_id: profileId };
  const wallets = useQuery({
    queryKey: ['wallets-all', profileId],
    queryFn: () =>
      call<Page<WalletSummary>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets', { params: { path, query: { page_size: 200 } } }),
      ),
  });
  const chains = useQuery({
    queryKey: ['profile-blockchains', profileId],
    queryFn: () =>
      call<Page<Blockchain>>(
        api.GET('/admin/v1/profiles/{profile_id}/blockchains', { params: { path, query: { page_size: 200 } } }),
      ),
  });
  const assets = useQuery({
    queryKey: ['profile-assets', profileId],
    queryFn: () =>
      call<Page<Asset>>(
        api.GET('/admin/v1/profiles/{profile_id}/assets', { params: { path, query: { page_size: 200 } } }),
      ),
  });
  const save = useMutation({
    mutationFn: (v: Values) => {
      const body = toPolicyInput(v);
      return policy === null
        ? call<Policy>(api.POST('/admin/v1/profiles/{profile_id}/policies', { params: { path }, body }))
        : call<Policy>(
            api.PUT('/admin/v1/profiles/{profile_id}/policies/{policy_id}', {
              params: { path: { ...path, policy_id: policy.policy_id } },
              body,
            }),
          );
    },
    onSuccess: onSaved,
  });

  const v = form.getValues();
  const chain = v.blockchain;
  const assetList = (assets.data?.data ?? []).filter((a) => chain === null || a.blockchain === chain);
  const asset = assets.data?.data.find((a) => a.asset_id === v.asset_id);
  const help = (field: 'per_transaction_limit' | 'daily_limit' | 'above_amount', extra: string) => {
    const raw = form.getValues()[field].trim();
    const conv = asset && BASE_UNITS.test(raw) ? ` = ${formatBaseUnits(raw, asset.decimals)} ${asset.symbol}` : '';
    const unit = asset
      ? `Base units of ${asset.symbol} (integer; 1 ${asset.symbol} = 10^${asset.decimals})`
      : 'Base units of the asset (integer)';
    return `${unit}${conv}. ${extra}`;
  };

  return (
    <form onSubmit={form.onSubmit((values) => save.mutate(values))}>
      <Stack>
        <TextInput label="Name" required maxLength={200} key={form.key('name')} {...form.getInputProps('name')} />
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <MultiSelect
            label="Wallets"
            description="None chosen: every wallet"
            searchable
            data={(wallets.data?.data ?? []).map((w) => ({ value: w.wallet_id, label: w.name ?? w.wallet_id }))}
            key={form.key('wallet_ids')}
            {...form.getInputProps('wallet_ids')}
          />
          <Select
            label="Blockchain"
            description="Empty: any blockchain"
            clearable
            data={(chains.data?.data ?? []).map((c) => ({ value: c.key, label: c.name }))}
            key={form.key('blockchain')}
            {...form.getInputProps('blockchain')}
          />
          <Select
            label="Asset"
            description="Empty: any asset"
            clearable
            data={assetList.map((a) => ({ value: a.asset_id, label: `${a.symbol} (${a.blockchain})` }))}
            key={form.key('asset_id')}
            {...form.getInputProps('asset_id')}
          />
        </SimpleGrid>
        <ProblemAlert
          error={wallets.error ?? chains.error ?? assets.error}
          title="The scope choices could not be read"
        />
        <Textarea
          label="Whitelist (one address per line)"
          description="Permitted destinations, in the chain's canonical form (EIP-55 on Ethereum). Empty: none permitted."
          minRows={4}
          key={form.key('whitelist')}
          {...form.getInputProps('whitelist')}
        />
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Per-transaction limit"
            inputMode="numeric"
            description={help('per_transaction_limit', 'Empty: no limit.')}
            key={form.key('per_transaction_limit')}
            {...form.getInputProps('per_transaction_limit')}
          />
          <TextInput
            label="Daily limit"
            inputMode="numeric"
            description={help('daily_limit', 'Per wallet and asset per UTC day. Empty: no limit.')}
            key={form.key('daily_limit')}
            {...form.getInputProps('daily_limit')}
          />
          <NumberInput
            label="Quorum"
            description="Distinct device approvals needed above the amount (1–16); 1 otherwise"
            min={1}
            max={16}
            allowDecimal={false}
            key={form.key('quorum')}
            {...form.getInputProps('quorum')}
          />
          <TextInput
            label="Above amount"
            inputMode="numeric"
            required
            description={help('above_amount', 'The quorum applies to transfers above it.')}
            key={form.key('above_amount')}
            {...form.getInputProps('above_amount')}
          />
        </SimpleGrid>
        <ProblemAlert error={save.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onCancel}>
            Cancel
          </Button>
          <Button type="submit" loading={save.isPending}>
            Save draft
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
