import { AppShell, Burger, Button, Group, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { Link, Outlet, useLocation } from 'react-router';
import { useLiveUpdates } from '../api/live';
import { useSession } from '../auth/session';
import { isAdminPath } from './adminMode';
import { AdminModeSwitch } from './AdminModeSwitch';
import { AdminNav } from './AdminNav';
import { LiveIndicator } from './LiveIndicator';
import { RunwayBadge } from '../wallet/RunwayText';
import { NotificationBell } from './NotificationBell';
import { UserMenu } from './UserMenu';

const MAIN_LINKS = [
  { to: '/sessions', label: 'Sessions' },
  { to: '/volumes', label: 'Volumes' },
  { to: '/bookings', label: 'Bookings' },
  { to: '/group', label: 'My group' },
  { to: '/requests', label: 'My requests' },
  { to: '/usage', label: 'Usage' },
  { to: '/wallet', label: 'Wallet' },
];

export function Shell() {
  const { adminMode } = useSession();
  const { pathname } = useLocation();
  const [navOpened, nav] = useDisclosure(false);
  const showNav = adminMode && isAdminPath(pathname);
  // The shell is mounted exactly while someone is signed in.
  useLiveUpdates();

  return (
    <AppShell
      header={{ height: 56 }}
      navbar={showNav ? { width: 220, breakpoint: 'sm', collapsed: { mobile: !navOpened } } : undefined}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            {showNav && (
              <Burger opened={navOpened} onClick={nav.toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            )}
            <Text component={Link} to="/" fw={700} size="lg" c="blue.8" td="none">
              GShare
            </Text>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <LiveIndicator />
            {MAIN_LINKS.map((link) => {
              const current = pathname === link.to || pathname.startsWith(`${link.to}/`);
              return (
                <Button
                  key={link.to}
                  component={Link}
                  to={link.to}
                  variant={current ? 'light' : 'subtle'}
                  aria-current={current ? 'page' : undefined}
                  size="sm"
                  px="xs"
                  style={{ flexShrink: 0 }}
                  rightSection={link.to === '/wallet' ? <RunwayBadge /> : undefined}
                >
                  {link.label}
                </Button>
              );
            })}
            <AdminModeSwitch />
            <NotificationBell />
            <UserMenu />
          </Group>
        </Group>
      </AppShell.Header>
      {showNav && (
        <AppShell.Navbar p="xs">
          <AdminNav onNavigate={nav.close} />
        </AppShell.Navbar>
      )}
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
