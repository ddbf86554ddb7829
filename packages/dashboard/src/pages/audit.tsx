/**
 * The audit log (`/audit`, Admin; `GET /admin/v1/audit`, newest first): a table paginated
 * server-side (time, actor, action, target, details JSON collapsed). Filters are applied by the
 * server (query params `action` — exact, or a prefix ending in `.` or `*` —, `actor_user_id`,
 * `target_type`, `target_id`, `from`, `to` as ISO date-times) and kept in the URL (same names), so
 * a filtered view can be shared and survives reload; `total` counts the matches. "Export CSV" /
 * "Export JSON" page through the filtered result (page_size 200) and download a file (Blob + object
 * URL); CSV fields are escaped by {@link csvField} (quoted when needed, spreadsheet formulas neutralised).
 */
import type { AuditEntry, Page } from '@custodian/coordinator/admin-api-types';
import { Button, Code, Group, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';

/** Server-side filters of `GET /admin/v1/audit`, as kept in the URL (empty string: not set). */
export interface AuditFilter {
  action: string;
  actor_user_id: string;
  target_type: string;
  target_id: string;
  /** ISO date-time, inclusive. */
  from: string;
  /** ISO date-time, exclusive. */
  to: string;
}

const FILTER_KEYS = ['action', 'actor_user_id', 'target_type', 'target_id', 'from', 'to'] as const;

/** The filter as query params: only the set ones, trimmed. */
export function filterQuery(f: AuditFilter): Partial<AuditFilter> {
  const q: Partial<AuditFilter> = {};
  for (const k of FILTER_KEYS) if (f[k].trim() !== '') q[k] = f[k].trim();
  return q;
}

/**
 * One CSV field (RFC 4180): a value starting with `=`, `+`, `-`, `@`, TAB or CR gets a leading `'`
 * so spreadsheets do not run it as a formula (CSV injection); then a field containing `,`, `"`,
 * CR or LF is wrapped in double quotes with inner `"` doubled. Objects are written as JSON.
 */
export function csvField(value: unknown): string {
  let s = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const COLUMNS = ['at', 'actor_user_id', 'action', 'target_type', 'target_id', 'details', 'audit_id'] as const;

/** The entries as CSV text: a header row of {@link COLUMNS}, CRLF line ends, `details` as JSON. */
export function toCsv(entries: readonly AuditEntry[]): string {
  const rows = entries.map((e) => COLUMNS.map((c) => csvField(e[c])).join(','));
  return `${[COLUMNS.join(','), ...rows].join('\r\n')}\r\n`;
}

/** Every entry matching `f` (the server filters; pages of 200 until `total` is read). */
async function fetchAll(f: AuditFilter): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for (let page = 1; ; page++) {
    const p = await call<Page<AuditEntry>>(
      api.GET('/admin/v1/audit', { params: { query: { ...filterQuery(f), page, page_size: 200 } } }),
    );
    out.push(...p.data);
    if (p.data.length === 0 || page * 200 >= p.total) return out;
  }
}

function download(text: string, type: string, name: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
}

/** The audit log screen. */
export function AuditPage() {
  const [page, setPage] = usePageParam();
  const [params, setParams] = useSearchParams();
  const filter = Object.fromEntries(FILTER_KEYS.map((k) => [k, params.get(k) ?? ''])) as unknown as AuditFilter;
  const form = useForm<AuditFilter>({ initialValues: filter });
  const [exporting, setExporting] = useState<'csv' | 'json' | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const list = useQuery({
    queryKey: ['audit', page, filterQuery(filter)],
    queryFn: () =>
      call<Page<AuditEntry>>(
        api.GET('/admin/v1/audit', { params: { query: { ...filterQuery(filter), page, page_size: PAGE_SIZE } } }),
      ),
  });
  const filtered = Object.keys(filterQuery(filter)).length > 0;
  /** Put `f` in the URL (back to page 1). */
  const apply = (f: AuditFilter) =>
    setParams(() => {
      const next = new URLSearchParams();
      for (const [k, v] of Object.entries(filterQuery(f))) next.set(k, v);
      return next;
    });

  const exportAs = async (kind: 'csv' | 'json') => {
    setExporting(kind);
    setExportError(null);
    try {
      const all = await fetchAll(filter);
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      if (kind === 'csv') download(toCsv(all), 'text/csv;charset=utf-8', `audit-${stamp}.csv`);
      else download(`${JSON.stringify(all, null, 2)}\n`, 'application/json', `audit-${stamp}.json`);
      notifications.show({ color: 'green', message: `Exported ${all.length} audit entries` });
    } catch (e) {
      setExportError(e);
    } finally {
      setExporting(null);
    }
  };

  const field = (k: keyof AuditFilter, label: string, description?: string) => (
    <TextInput label={label} description={description} {...form.getInputProps(k)} />
  );

  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Audit log</Title>
        <Group gap="xs">
          <Button
            variant="default"
            loading={exporting === 'csv'}
            disabled={exporting !== null}
            onClick={() => void exportAs('csv')}
          >
            Export CSV
          </Button>
          <Button
            variant="default"
            loading={exporting === 'json'}
            disabled={exporting !== null}
            onClick={() => void exportAs('json')}
          >
            Export JSON
          </Button>
        </Group>
      </Group>
      <form onSubmit={form.onSubmit(apply)} aria-label="Audit filters">
        <Stack gap="xs">
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {field('action', 'Action', 'Exact, or a prefix ending in . or * (policy.)')}
            {field('actor_user_id', 'Actor user ID')}
            {field('target_type', 'Target type', 'e.g. policy, user, wallet')}
            {field('target_id', 'Target ID')}
            {field('from', 'From', 'ISO time, e.g. 2026-01-01T00:00:00Z (inclusive)')}
            {field('to', 'To', 'ISO time (exclusive)')}
          </SimpleGrid>
          <Group gap="xs">
            <Button type="submit">Apply filters</Button>
            <Button
              variant="default"
              disabled={!filtered}
              onClick={() => {
                const empty = Object.fromEntries(FILTER_KEYS.map((k) => [k, ''])) as unknown as AuditFilter;
                form.setValues(empty);
                apply(empty);
              }}
            >
              Clear filters
            </Button>
          </Group>
        </Stack>
      </form>
      <ProblemAlert error={exportError} title="Export failed" />
      <QueryState
        query={list}
        isEmpty={(d) => d.total === 0}
        empty={filtered ? 'No audit entry matches the filters.' : 'The audit log is empty.'}
      >
        {(d) => {
          const rows = d.data;
          return (
            <>
              {
                <Table.ScrollContainer minWidth={820}>
                  <Table striped aria-label="Audit log">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Time</Table.Th>
                        <Table.Th>Actor</Table.Th>
                        <Table.Th>Action</Table.Th>
                        <Table.Th>Target</Table.Th>
                        <Table.Th>Details</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {rows.map((e) => (
                        <Table.Tr key={e.audit_id}>
                          <Table.Td>{new Date(e.at).toLocaleString()}</Table.Td>
                          <Table.Td>
                            <Text size="sm" ff="monospace">
                              {e.actor_user_id ?? 'system'}
                            </Text>
                          </Table.Td>
                          <Table.Td>{e.action}</Table.Td>
                          <Table.Td>
                            <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
                              {[e.target_type, e.target_id].filter(Boolean).join(' ') || '—'}
                            </Text>
                          </Table.Td>
                          <Table.Td>
                            {e.details === null || e.details === undefined ? (
                              '—'
                            ) : (
                              <details>
                                <summary>Details</summary>
                                <Code block>{JSON.stringify(e.details, null, 2)}</Code>
                              </details>
                            )}
                          </Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </Table.ScrollContainer>
              }
              <Pager page={page} total={d.total} onChange={setPage} label="Audit log" />
            </>
          );
        }}
      </QueryState>
    </Stack>
  );
}
