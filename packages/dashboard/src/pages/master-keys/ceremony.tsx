/**
 * The live ceremony panel of the Master key screen ("Ceremony progress"): a ceremony of
 * `GET /admin/v1/ceremonies/{id}` (master key, refresh, reshare, drill) kept live by
 * {@link useLiveQuery} over `/admin/v1/ceremonies/{id}/events` (polling the GET when the stream is
 * absent): status and outcome, phase and parties ready of `progress`, the countdown to `deadline`
 * (5 minutes after the start), and, when it failed, each blame the coordinator checked — culprit
 * name, the failed check (reason code), and whether the evidence was verified or is a dispute.
 * When the ceremony reaches a final status, the master-key and ceremony lists are invalidated so
 * the screen shows the new key and the row's final status without a reload.
 */
import type { Blame, DrillResult, KeyCeremony } from '@custodian/coordinator/admin-api-types';
import { Alert, Badge, Card, Group, Progress, Stack, Table, Text, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, call } from '../../api/client';
import { useLiveQuery } from '../../api/live';
import { QueryState } from '../../components/states';

/** Query key of one ceremony. */
export const ceremonyKey = (id: string) => ['ceremony', id] as const;

/** Colour of a ceremony status badge. */
export const CEREMONY_COLOR: Readonly<Record<string, string>> = {
  RUNNING: 'blue',
  SUCCEEDED: 'green',
  FAILED: 'red',
  TIMED_OUT: 'orange',
};

/** Seconds left until `deadline` (ISO 8601), ticking every second; null without a deadline. */
function useSecondsLeft(deadline: string | null | undefined, live: boolean): number | null {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [live]);
  if (!deadline) return null;
  return Math.max(0, Math.round((Date.parse(deadline) - now) / 1000));
}

const mmss = (s: number) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;

/** The blames of a ceremony: who (when proven), which check failed, verified or a dispute. */
export function BlameTable({ blame }: { blame: readonly Blame[] }) {
  if (blame.length === 0) return null;
  return (
    <Table.ScrollContainer minWidth={720}>
      <Table aria-label="Culprits and evidence">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Culprit</Table.Th>
            <Table.Th>Reason code</Table.Th>
            <Table.Th>Evidence</Table.Th>
            <Table.Th>Reported by</Table.Th>
            <Table.Th>Detail</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {blame.map((b, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: blames have no id of their own
            <Table.Tr key={i}>
              <Table.Td>
                {b.verified && b.culprit !== null ? (
                  <Text fw={600}>{b.culprit_name ?? b.culprit}</Text>
                ) : (
                  <Text c="dimmed">
                    nobody proven (claimed: {b.claimed_culprit_name ?? (b.claimed_culprit || 'nobody')})
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <Text ff="monospace" size="sm">
                  {b.check}
                </Text>
                <Text size="xs" c="dimmed">
                  {b.protocol} round {b.round}
                </Text>
              </Table.Td>
              <Table.Td>
                <Badge color={b.verified ? 'red' : 'yellow'} variant="light">
                  {b.verified ? 'verified' : 'dispute'}
                </Badge>
              </Table.Td>
              <Table.Td>{b.accuser_name ?? b.accuser}</Table.Td>
              <Table.Td>
                <Text size="sm">{b.summary}</Text>
                {b.detail && (
                  <Text size="xs" c="dimmed">
                    {b.detail}
                  </Text>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** A finished recovery drill's outcome: each test signature verified or not, each party's backup state. */
function DrillOutcome({ result }: { result: unknown }) {
  const r = result as Partial<DrillResult> | null;
  if (!r || !Array.isArray(r.signatures)) return null;
  return (
    <Stack gap={4}>
      <Text size="sm" fw={600}>
        Recovery drill result
      </Text>
      {r.signatures.map((s) => (
        <Text size="sm" key={`${s.algorithm}:${s.public_key}`}>
          {s.algorithm}: {s.verified ? 'signature verified' : 'signature NOT verified'}
        </Text>
      ))}
      {(r.signers ?? []).map((p) => (
        <Text size="sm" key={`${p.kind}:${p.id}`}>
          {p.kind}:{p.id} — backup {p.backup_current ? 'current' : 'NOT current'}
          {p.backup_at ? ` (${new Date(p.backup_at).toLocaleString()})` : ''}
        </Text>
      ))}
    </Stack>
  );
}

/** The live panel of ceremony `ceremonyId` (a UUID). */
export function CeremonyPanel({ ceremonyId }: { ceremonyId: string }) {
  const query = useLiveQuery<KeyCeremony>({
    queryKey: ceremonyKey(ceremonyId),
    queryFn: () =>
      call<KeyCeremony>(
        api.GET('/admin/v1/ceremonies/{ceremony_id}', { params: { path: { ceremony_id: ceremonyId } } }),
      ),
    streamUrl: `/admin/v1/ceremonies/${ceremonyId}/events`,
    final: (c) => c.status !== 'RUNNING',
  });
  const c = query.data;
  const running = c?.status === 'RUNNING';
  const finalStatus = c !== undefined && !running ? c.status : null;
  const qc = useQueryClient();
  useEffect(() => {
    if (finalStatus === null) return;
    void qc.invalidateQueries({ queryKey: ['master-keys'] });
    void qc.invalidateQueries({ queryKey: ['ceremonies'] });
  }, [finalStatus, qc]);
  const left = useSecondsLeft(c?.deadline, running);
  return (
    <Card withBorder component="section" aria-labelledby="ceremony-progress">
      <Stack>
        <Title order={3} id="ceremony-progress">
          Ceremony progress
        </Title>
        <QueryState query={query}>
          {(c) => (
            <Stack gap="sm">
              <Group gap="sm" wrap="wrap">
                <Text size="sm">
                  {c.kind} ceremony <code>{c.ceremony_id}</code>
                </Text>
                <Text size="sm">Status</Text>
                <Badge color={CEREMONY_COLOR[c.status] ?? 'gray'}>{c.status}</Badge>
                {c.outcome && (
                  <Text size="sm" c="dimmed">
                    outcome {c.outcome}
                  </Text>
                )}
                {query.streaming && (
                  <Badge variant="dot" color="green">
                    live
                  </Badge>
                )}
              </Group>
              {c.progress && (
                <Stack gap={4}>
                  <Text size="sm">
                    Phase {c.progress.phase}: {c.progress.parties_ready} of {c.progress.parties_total} parties ready
                    {c.progress.message ? ` — ${c.progress.message}` : ''}
                  </Text>
                  <Progress
                    value={
                      c.progress.parties_total > 0 ? (100 * c.progress.parties_ready) / c.progress.parties_total : 0
                    }
                    aria-label="Parties ready"
                    animated={running}
                  />
                </Stack>
              )}
              {running && left !== null && (
                <Text size="sm" aria-live="polite">
                  Time left: {mmss(left)} (the ceremony is abandoned at{' '}
                  {new Date(c.deadline ?? '').toLocaleTimeString()})
                </Text>
              )}
              {running && (
                <Text size="sm" c="dimmed">
                  Every selected signer must be online; phones show the ceremony and take part on their own.
                </Text>
              )}
              {c.status === 'SUCCEEDED' && c.master_key_id && (
                <Alert color="green" title="Ceremony succeeded">
                  Master key <code>{c.master_key_id}</code>.
                </Alert>
              )}
              {(c.status === 'FAILED' || c.status === 'TIMED_OUT') && (
                <Alert color="red" title={c.status === 'TIMED_OUT' ? 'The ceremony timed out' : 'The ceremony failed'}>
                  {c.error ?? c.outcome ?? 'No detail was recorded.'}
                  {c.unverified_accusers.length > 0 &&
                    ` Parties whose accusations could not be verified: ${c.unverified_accusers.join(', ')}.`}
                </Alert>
              )}
              {c.kind === 'drill' && <DrillOutcome result={c.result} />}
              <BlameTable blame={c.blame ?? []} />
            </Stack>
          )}
        </QueryState>
      </Stack>
    </Card>
  );
}
