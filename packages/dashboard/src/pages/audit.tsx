/**
 * The audit log (`/audit`, Admin; `GET /admin/v1/audit`, newest first): a table paginated
 * server-side (time, actor, action, target, details JSON collapsed). The route takes only `page`
 * and `page_size`, so the filters (action, actor, target text) apply on the client to the rows of
 * the current page — the screen says so. "Export CSV" / "Export JSON" read every page of the log
 * (page_size 200), apply the same filter, and download a file (Blob + object URL); CSV fields are
 * escaped by {@link csvField} (quoted when needed, spreadsheet formulas neutralised).
 */
import type { AuditEntry, Page } from '@custodian/coordinator/admin-api-types';
import { Alert, Button, Code, Group, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';

/** Client-side filter of audit entries (case-insensitive substrings; empty: any). */
export interface AuditFilter {
  action: string;
  actor: string;
  target: string;
}

/** Whether `e` matches `f`. */
export function matches(e: AuditEntry, f: AuditFilter): boolean {
  const has = (v: string | null, q: string) =>
    q.trim() === '' || (v ?? '').toLowerCase().includes(q.trim().toLowerCase());
  return (
    has(e.action, f.action) &&
    has(e.actor_user_id, f.actor) &&
    has(`${e.target_type ?? ''} ${e.target_id ?? ''}`, f.target)
  );
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

/** Every entry of the log (pages of 200, until `total` is read) that matches `f`. */
async function fetchAll(f: AuditFilter): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for (let page = 1; ; page++) {
    const p = await call<Page<AuditEntry>>(api.GET('/admin/v1/audit', { params: { query: { page, page_size: 200 } } }));
    out.push(...p.data.filter((e) => matches(e, f)));
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
  const [filter, setFilter] = useState<AuditFilter>({ action: '', actor: '', target: '' });
  const [exporting, setExporting] = useState<'csv' | 'json' | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const list = useQuery({
    queryKey: ['audit', page],
    queryFn: () =>
      call<Page<AuditEntry>>(api.GET('/admin/v1/audit', { params: { query: { page, page_size: PAGE_SIZE } } })),
  });
  const filtered = filter.action !== '' || filter.actor !== '' || filter.target !== '';

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

  const field = (k: keyof AuditFilter, label: string) => (
    <TextInput
      label={label}
      value={filter[k]}
      onChange={(e) => {
        const v = e.currentTarget.value;
        setFilter((f) => ({ ...f, [k]: v }));
      }}
    />
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
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        {field('action', 'Filter by action')}
        {field('actor', 'Filter by actor')}
        {field('target', 'Filter by target')}
      </SimpleGrid>
      <Text size="sm" c="dimmed">
        The audit API filters nothing itself: these filters apply to the entries of the current page; the exports read
        the whole log and apply them to every entry.
      </Text>
      <ProblemAlert error={exportError} title="Export failed" />
      <QueryState query={list} isEmpty={(d) => d.total === 0} empty="The audit log is empty.">
        {(d) => {
          const rows = d.data.filter((e) => matches(e, filter));
          return (
            <>
              {filtered && rows.length === 0 ? (
                <Alert color="gray">No entry of this page matches the filters.</Alert>
              ) : (
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
              )}
              <Pager page={page} total={d.total} onChange={setPage} label="Audit log" />
            </>
          );
        }}
      </QueryState>
    </Stack>
  );
}
