/**
 * Parties of a master key: the APPROVED devices (phones) and registered server signers an Admin
 * chooses from, their names for display, and the form pieces that choose them — one checkbox per
 * party labelled by its name ({@link PartyChecklist}) — with the rule the coordinator applies
 * again ({@link partyProblem}: at least {@link MIN_MOBILE_SIGNERS} phones, 2 ≤ k ≤ n).
 */
import type { PartyRef } from '@custodian/coordinator/admin-api-types';
import { Checkbox, Fieldset, SimpleGrid, Text } from '@mantine/core';
import { useDevices } from '../devices';
import { useSigners } from '../signers';

/** Phones a master key needs at least (seed §8; the server checks its configured value again). */
export const MIN_MOBILE_SIGNERS = 2;

/** A party the Admin may choose, with its display name. */
export interface PartyChoice extends PartyRef {
  readonly name: string;
  /** What it is, for the checkbox description: "Phone (android 14)" or "Server /ip4/…". */
  readonly note: string;
}

/** `kind:id`, the key of a party in sets and lists (as the coordinator writes `blamed`). */
export const partyKey = (p: PartyRef) => `${p.kind}:${p.id}`;

/** The parties an Admin may choose (APPROVED devices first, then server signers) and their loading state. */
export function usePartyChoices(enabled: boolean) {
  const devices = useDevices(enabled);
  const signers = useSigners(enabled);
  const choices: PartyChoice[] = [
    ...(devices.data ?? [])
      .filter((d) => d.status === 'APPROVED')
      .map((d) => ({
        kind: 'device' as const,
        id: d.device_id,
        name: d.name,
        note: `Phone (${d.platform} ${d.os_version})`,
      })),
    ...(signers.data ?? []).map((s) => ({
      kind: 'server' as const,
      id: s.signer_id,
      name: s.name,
      note: `Server ${s.address}`,
    })),
  ];
  return {
    choices,
    isPending: devices.isPending || signers.isPending,
    error: devices.error ?? signers.error,
  };
}

/** Display name of a party from `choices`, else `kind:id`. */
export function partyName(choices: readonly PartyChoice[], p: PartyRef): string {
  return choices.find((c) => c.kind === p.kind && c.id === p.id)?.name ?? partyKey(p);
}

/** The parties recorded on a master key or ceremony (`parties` is JSON: `[{kind, id, …}]`). */
export function recordedParties(parties: unknown): PartyRef[] {
  if (!Array.isArray(parties)) return [];
  return parties.filter(
    (p): p is PartyRef =>
      typeof p === 'object' && p !== null && (p.kind === 'server' || p.kind === 'device') && typeof p.id === 'string',
  );
}

/** Why `selected` with threshold `k` cannot start a ceremony, or null when it can. */
export function partyProblem(selected: readonly PartyRef[], k: number | string): string | null {
  const phones = selected.filter((p) => p.kind === 'device').length;
  if (phones < MIN_MOBILE_SIGNERS)
    return `Choose at least ${MIN_MOBILE_SIGNERS} mobile signers (phones); ${phones} chosen.`;
  const n = selected.length;
  if (typeof k !== 'number' || !Number.isInteger(k) || k < 2 || k > n)
    return `The threshold k must be a whole number from 2 to ${n} (the number of parties).`;
  return null;
}

/** One checkbox per party, labelled by its name; `value` holds `kind:id` keys. */
export function PartyChecklist({
  legend,
  choices,
  value,
  onChange,
  exclude = [],
}: {
  legend: string;
  choices: readonly PartyChoice[];
  value: readonly string[];
  onChange: (keys: string[]) => void;
  exclude?: readonly string[];
}) {
  const shown = choices.filter((c) => !exclude.includes(partyKey(c)));
  return (
    <Fieldset legend={legend}>
      {shown.length === 0 ? (
        <Text size="sm" c="dimmed">
          No approved device or registered server signer yet.
        </Text>
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {shown.map((c) => {
            const key = partyKey(c);
            return (
              <Checkbox
                key={key}
                label={c.name}
                description={c.note}
                checked={value.includes(key)}
                onChange={(e) => onChange(e.currentTarget.checked ? [...value, key] : value.filter((v) => v !== key))}
              />
            );
          })}
        </SimpleGrid>
      )}
    </Fieldset>
  );
}

/** The {@link PartyRef}s of `keys` (`kind:id`). */
export function refsOf(keys: readonly string[]): PartyRef[] {
  return keys.map((k) => {
    const i = k.indexOf(':');
    return { kind: k.slice(0, i) as PartyRef['kind'], id: k.slice(i + 1) };
  });
}
