/**
 * Loading, error and empty states every screen uses, so each looks and reads the same:
 * {@link ProblemAlert} shows an admin API problem with its title and detail as the server gave
 * them (and field errors of a 422); {@link QueryState} renders a TanStack query's loading,
 * error, empty and loaded states.
 */
import { Alert, Center, Group, List, Loader, Stack, Text } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ApiProblem } from '../api/problem';

/** An error as an alert: an {@link ApiProblem}'s title (bold), detail and field errors; other errors' message. */
export function ProblemAlert({ error, title }: { error: unknown; title?: string }) {
  if (error === null || error === undefined) return null;
  const p = error instanceof ApiProblem ? error : undefined;
  return (
    <Alert color="red" role="alert" title={title ?? p?.title ?? 'Something went wrong'}>
      <Stack gap={4}>
        {title !== undefined && p !== undefined && <Text fw={600}>{p.title}</Text>}
        <Text size="sm">{p ? (p.detail ?? p.code) : String((error as Error)?.message ?? error)}</Text>
        {p && p.errors.length > 0 && (
          <List size="sm">
            {p.errors.map((e, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: field errors have no identity of their own
              <List.Item key={i}>{[e.field, e.message].filter(Boolean).join(': ')}</List.Item>
            ))}
          </List>
        )}
      </Stack>
    </Alert>
  );
}

/** A centred spinner with an accessible label (role status: axe-core forbids aria-label on a plain span). */
export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <Center py="xl" aria-busy="true">
      <Group gap="sm">
        <Loader size="sm" role="status" aria-label={label} />
        <Text c="dimmed">{label}…</Text>
      </Group>
    </Center>
  );
}

/** What an empty list says, and what to do about it. */
export function Empty({ children }: { children: ReactNode }) {
  return (
    <Center py="xl">
      <Text c="dimmed">{children}</Text>
    </Center>
  );
}

/**
 * The states of a query: loading → {@link Loading}; error → {@link ProblemAlert}; `isEmpty(data)`
 * → {@link Empty} with `empty`; otherwise `children(data)`.
 */
export function QueryState<T>({
  query,
  empty,
  isEmpty,
  children,
}: {
  query: UseQueryResult<T>;
  empty?: ReactNode;
  isEmpty?: (data: T) => boolean;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Loading />;
  if (query.isError) return <ProblemAlert error={query.error} />;
  if (empty !== undefined && isEmpty?.(query.data)) return <Empty>{empty}</Empty>;
  return <>{children(query.data)}</>;
}
