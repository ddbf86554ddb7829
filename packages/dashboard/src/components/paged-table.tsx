/**
 * A titled, server-paged table section: heading, loading / empty / error states (`QueryState`),
 * a horizontally scrolling table named by its title, and the `Pager` under it.
 */
import type { Page } from '@custodian/coordinator/admin-api-types';
import { Stack, Table, Title } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Pager } from './pager';
import { QueryState } from './states';

/** One column header; `right` aligns it right (numeric columns such as amounts). */
export type Column = string | { label: string; right: true };

/**
 * Section `title` (heading of `order`, also the table's accessible name) over the rows of `query`
 * (a `Page<T>` answer: `total` counts all rows), `row` rendering one `<Table.Tr>` per item, `empty`
 * shown when `total` is 0, and a pager named `pagerLabel` driving `page` / `onPage` (from 1).
 * `minWidth` (px) is where the table starts to scroll sideways instead of squeezing.
 */
export function PagedTable<T>({
  title,
  order = 3,
  query,
  empty,
  minWidth,
  columns,
  row,
  page,
  onPage,
  pagerLabel,
}: {
  title: string;
  order?: 3 | 4;
  query: UseQueryResult<Page<T>>;
  empty: string;
  minWidth: number;
  columns: Column[];
  row: (item: T) => ReactNode;
  page: number;
  onPage: (page: number) => void;
  pagerLabel: string;
}) {
  return (
    <Stack gap="xs">
      <Title order={order}>{title}</Title>
      <QueryState query={query} isEmpty={(d) => d.total === 0} empty={empty}>
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={minWidth}>
              <Table aria-label={title}>
                <Table.Thead>
                  <Table.Tr>
                    {columns.map((c) =>
                      typeof c === 'string' ? (
                        <Table.Th key={c}>{c}</Table.Th>
                      ) : (
                        <Table.Th key={c.label} ta="right">
                          {c.label}
                        </Table.Th>
                      ),
                    )}
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>{d.data.map(row)}</Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={onPage} label={pagerLabel} />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
