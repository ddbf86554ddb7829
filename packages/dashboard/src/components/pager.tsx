/**
 * Server-side pagination of the admin API's list routes (`page` from 1, `page_size` ≤ 200; the
 * answer's `total` counts all matches): {@link usePageParam} keeps the page in the URL
 * (`?page=N`, so back/forward and links work) and {@link Pager} renders the control.
 */
import { Group, Pagination, Text } from '@mantine/core';
import { useSearchParams } from 'react-router';

/** Default rows per page of the dashboard's tables. */
export const PAGE_SIZE = 20;

/** The current page (from `?<name>=`, default 1) and its setter. */
export function usePageParam(name = 'page'): [number, (page: number) => void] {
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number.parseInt(params.get(name) ?? '1', 10) || 1);
  const set = (p: number) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (p <= 1) next.delete(name);
        else next.set(name, String(p));
        return next;
      },
      { replace: false },
    );
  return [page, set];
}

/** Page control and "x–y of total" for a list answer; nothing when everything fits on one page. */
export function Pager({
  page,
  pageSize = PAGE_SIZE,
  total,
  onChange,
  label = 'Pages',
}: {
  page: number;
  pageSize?: number;
  total: number;
  onChange: (page: number) => void;
  label?: string;
}) {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const from = total === 0 ? 0 : (page - 1) * pageSize + 1;
  const to = Math.min(total, page * pageSize);
  return (
    <Group justify="space-between" mt="sm" wrap="wrap">
      <Text size="sm" c="dimmed">
        {from}–{to} of {total}
      </Text>
      {pages > 1 && (
        <Pagination
          total={pages}
          value={page}
          onChange={onChange}
          size="sm"
          getControlProps={(control) => ({ 'aria-label': `${control} page` })}
          getItemProps={(p) => ({ 'aria-label': `${label}: page ${p}` })}
        />
      )}
    </Group>
  );
}
