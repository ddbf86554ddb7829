/**
 * A reader of the Prometheus text exposition format (version 0.0.4) for the observability tests:
 * samples with their labels, and the `# TYPE` of each metric family.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  text: string;
  samples: Sample[];
  /** Metric family name → type (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
  /** Family names. */
  names: Set<string>;
}

function parseLabels(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const m of s.matchAll(re)) {
    out[m[1] as string] = (m[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return out;
}

/** Parse an exposition. @throws Error on a sample line it cannot read */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name as string, type as string);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    samples.push({ name: m[1] as string, labels: parseLabels(m[3] ?? ''), value: Number(m[4]) });
  }
  return { text, samples, types, names: new Set(types.keys()) };
}

/** The value of the sample `name` whose labels include `labels` (undefined: none; throws when several match). */
export function metricValue(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1 && Object.keys(labels).length > 0) {
    // several series match: their labels are a superset; sum only when asked exactly — refuse instead
    throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}`);
  }
  return hits.length === 0 ? undefined : hits.reduce((a, s) => a + s.value, 0);
}
