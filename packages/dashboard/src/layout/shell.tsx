/**
 * The frame of every logged-in screen: a header (product name, profile picker, the user's name
 * and role, log out) and the navigation of the screens the role may open ({@link SCREENS}); on
 * narrow screens (< 48em) the navigation folds behind a burger button.
 */
import { AppShell, Badge, Burger, Button, Group, NavLink, ScrollArea, Select, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { Link, Outlet, useLocation } from 'react-router';
import { ROLE_LABELS } from '../api/roles';
import { useProfile, useSession } from '../auth/session';
import { SCREENS } from '../routes';

export function Shell() {
  const { me, can, logout } = useSession();
  const { profiles, profileId, select } = useProfile();
  const [opened, { toggle, close }] = useDisclosure(false);
  const { pathname } = useLocation();
  const nav = SCREENS.filter((s) => s.nav !== undefined && can(s.requires));
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger
              opened={opened}
              onClick={toggle}
              hiddenFrom="sm"
              size="sm"
              aria-label={opened ? 'Close navigation' : 'Open navigation'}
            />
            <Title order={1} size="h4">
              Custodian
            </Title>
          </Group>
          <Group gap="sm" wrap="nowrap">
            {profiles.length > 1 && (
              <Select
                aria-label="Profile"
                size="xs"
                w={160}
                visibleFrom="xs"
                data={profiles.map((p) => ({ value: p.profile_id, label: p.name }))}
                value={profileId ?? null}
                onChange={(v) => v && select(v)}
                allowDeselect={false}
              />
            )}
            <Text size="sm" visibleFrom="md" truncate maw={200}>
              {me?.name}
            </Text>
            {me && <Badge variant="light">{ROLE_LABELS[me.role]}</Badge>}
            <Button size="xs" variant="default" onClick={() => void logout()}>
              Log out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main navigation">
        <ScrollArea>
          {nav.map((s) => (
            <NavLink
              key={s.path}
              component={Link}
              to={s.path}
              label={s.nav}
              active={pathname === s.path || pathname.startsWith(`${s.path}/`)}
              onClick={close}
            />
          ))}
        </ScrollArea>
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
