/**
 * Live views of a resource that changes on the server (a ceremony's progress, a transfer's
 * status): the coordinator streams it as Server-Sent Events (`text/event-stream`, each event's
 * `data` the same JSON as the resource's GET, sent whenever it changes; the stream ends when the
 * resource reaches a final state). {@link useLiveQuery} puts every event into the TanStack query
 * cache under `queryKey`, so the screen re-renders; when the stream cannot be opened or drops,
 * the query polls every `fallbackMs` instead.
 */
import { type QueryKey, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';

/**
 * A query kept up to date by the SSE stream at `streamUrl` (same origin; the session cookie rides
 * along). `final(data)` says when to stop polling as well.
 */
export function useLiveQuery<T>(opts: {
  queryKey: QueryKey;
  queryFn: () => Promise<T>;
  streamUrl: string | undefined;
  final?: (data: T) => boolean;
  fallbackMs?: number;
}) {
  const qc = useQueryClient();
  const [streaming, setStreaming] = useState(false);
  const { queryKey, streamUrl, final, fallbackMs = 2000 } = opts;
  const keyText = JSON.stringify(queryKey);
  const query = useQuery({
    queryKey,
    queryFn: opts.queryFn,
    refetchInterval: (q) => (streaming || (q.state.data !== undefined && final?.(q.state.data)) ? false : fallbackMs),
  });
  const done = query.data !== undefined && final?.(query.data) === true;
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyText stands for queryKey (a fresh array each render)
  useEffect(() => {
    if (streamUrl === undefined || done || typeof EventSource === 'undefined') return;
    const es = new EventSource(streamUrl);
    es.onopen = () => setStreaming(true);
    es.onmessage = (ev) => {
      try {
        qc.setQueryData(queryKey, JSON.parse(ev.data) as T);
      } catch {
        // a malformed event: ignore it; the next one or the fallback poll corrects the view
      }
    };
    es.onerror = () => {
      es.close();
      setStreaming(false);
    };
    return () => {
      es.close();
      setStreaming(false);
    };
  }, [streamUrl, done, keyText, qc]);
  return { ...query, streaming };
}
