/**
 * "Dry-run a transfer" on the Policies screen (issue #24): a form (Policy, Version, Wallet, Asset,
 * Amount, Destination address) that posts `POST /admin/v1/profiles/{p}/policies/{id}/versions/{v}/dry-run`
 * and shows the decision the transfer pipeline would reach under THAT version — the draft awaiting
 * signature by default, else the active one — : allowed with the approvals it needs, or rejected with
 * its sub-status; whether the version's scope covers the transfer; today's spent and available
 * amounts (base-unit integer strings, shown as such). Writes nothing on the server.
 */
import type { Policy } from '@custodian/coordinator/admin-api-types';
import { Alert, Button, Code, Group, Paper, Select, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation } from '@tanstack/react-query';
import { api, call } from '../../api/client';
import { ProblemAlert } from '../../components/states';

/** The dry-run answer (amounts: base-unit integer strings). */
export interface DryRunResult {
  decision: 'ALLOW' | 'DENY' | 'NO_POLICY_FOUND';
  status: string;
  sub_status: string | null;
  approvals_required: number;
  in_scope?: boolean;
  amount_base_units?: string;
  spent_today_base_units?: string;
  available_base_units?: string;
  sufficient_balance?: boolean;
  policy: { policy_id: string; version: number } | null;
}

interface DryRunForm {
  policy_id: string;
  version: string;
  wallet_id: string;
  asset_id: string;
  /** Decimal string in asset units ("1.5"), as the custody API takes it. */
  amount: string;
  destination_address: string;
}

/** The version offered by default: the draft awaiting signature, else the active one, else the newest. */
export function defaultVersion(p: Policy | undefined): string {
  if (p === undefined) return '';
  const draft = p.versions.find((v) => v.status === 'PENDING_SIGNATURE' && v.document.deleted !== true);
  return String(draft?.version ?? p.active_version ?? p.versions[0]?.version ?? '');
}

/**
 * The dry-run panel. `policies`: the policies listed on the current page; `initialPolicyId`: the one
 * to preselect (e.g. the policy being edited).
 */
export function DryRunPanel({
  profileId,
  policies,
  initialPolicyId,
}: {
  profileId: string;
  policies: readonly Policy[];
  initialPolicyId?: string;
}) {
  const first = policies.find((p) => p.policy_id === initialPolicyId) ?? policies[0];
  const form = useForm<DryRunForm>({
    initialValues: {
      policy_id: first?.policy_id ?? '',
      version: defaultVersion(first),
      wallet_id: '',
      asset_id: '',
      amount: '',
      destination_address: '',
    },
    validate: {
      policy_id: (v) => (v === '' ? 'Choose a policy' : null),
      version: (v) => (v === '' ? 'Choose a version' : null),
      wallet_id: (v) => (v.trim() === '' ? 'Enter the wallet ID' : null),
      asset_id: (v) => (v.trim() === '' ? 'Enter the asset ID' : null),
      amount: (v) => (/^[0-9]+(\.[0-9]+)?$/.test(v.trim()) ? null : 'A positive decimal amount, e.g. 1.5'),
      destination_address: (v) => (v.trim() === '' ? 'Enter the destination address' : null),
    },
  });
  const run = useMutation({
    mutationFn: (f: DryRunForm) =>
      call<DryRunResult>(
        api.POST('/admin/v1/profiles/{profile_id}/policies/{policy_id}/versions/{version}/dry-run', {
          params: { path: { profile_id: profileId, policy_id: f.policy_id, version: Number(f.version) } },
          body: {
            wallet_id: f.wallet_id.trim(),
            asset_id: f.asset_id.trim(),
            amount: f.amount.trim(),
            destination_address: f.destination_address.trim(),
          },
        }),
      ),
  });
  const chosen = policies.find((p) => p.policy_id === form.values.policy_id);
  const versions = (chosen?.versions ?? [])
    .filter((v) => v.document.deleted !== true && !(v.status === 'DELETED'))
    .map((v) => ({ value: String(v.version), label: `v${v.version} (${v.status.toLowerCase().replace('_', ' ')})` }));
  const r = run.data;

  return (
    <Paper withBorder p="md">
      <form onSubmit={form.onSubmit((v) => run.mutate(v))} aria-label="Dry-run a transfer">
        <Stack gap="xs">
          <Title order={3}>Dry-run a transfer</Title>
          <Text size="sm" c="dimmed">
            Evaluates a would-be transfer against the chosen version — a draft not yet signed, or the active one —
            exactly as the transfer pipeline would. Nothing is created.
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <Select
              label="Policy"
              data={policies.map((p) => ({ value: p.policy_id, label: p.name }))}
              {...form.getInputProps('policy_id')}
              onChange={(v) => {
                form.setFieldValue('policy_id', v ?? '');
                form.setFieldValue('version', defaultVersion(policies.find((p) => p.policy_id === v)));
                run.reset();
              }}
              allowDeselect={false}
            />
            <Select label="Version" data={versions} {...form.getInputProps('version')} allowDeselect={false} />
            <TextInput label="Wallet" description="Wallet ID" {...form.getInputProps('wallet_id')} />
            <TextInput label="Asset" description="Asset ID" {...form.getInputProps('asset_id')} />
            <TextInput
              label="Amount"
              description="In asset units, e.g. 1.5"
              inputMode="decimal"
              {...form.getInputProps('amount')}
            />
            <TextInput label="Destination address" {...form.getInputProps('destination_address')} />
          </SimpleGrid>
          <Group>
            <Button type="submit" loading={run.isPending}>
              Run dry-run
            </Button>
          </Group>
          <ProblemAlert error={run.error} title="The dry-run failed" />
          {r !== undefined && (
            <Alert
              color={r.decision === 'ALLOW' ? 'green' : 'red'}
              title={
                r.decision === 'ALLOW'
                  ? `Allowed — ${r.approvals_required} approval${r.approvals_required === 1 ? '' : 's'} needed`
                  : `Rejected: ${r.sub_status ?? r.status}`
              }
              aria-label="Dry-run decision"
            >
              <Stack gap={2}>
                <Text size="sm">
                  Status the transfer would get: <Code>{r.status}</Code>
                  {r.policy !== null && ` (policy version v${r.policy.version})`}
                </Text>
                {r.in_scope === false && (
                  <Text size="sm">
                    This version's scope does not cover the transfer: another policy would govern it.
                  </Text>
                )}
                {r.spent_today_base_units !== undefined && (
                  <Text size="sm">
                    Spent today (base units): <Code>{r.spent_today_base_units}</Code>; available (base units):{' '}
                    <Code>{r.available_base_units}</Code>
                    {r.sufficient_balance === false && ' — the balance would not cover it'}
                  </Text>
                )}
              </Stack>
            </Alert>
          )}
        </Stack>
      </form>
    </Paper>
  );
}
