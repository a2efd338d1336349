import { Badge, Button, Card, Group, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { Link, Navigate, useNavigate } from 'react-router';
import { useUnreadNotices } from '../api/hooks/notifications';
import { useSessions, type SessionState } from '../api/hooks/sessions';
import { useMyWallet } from '../api/hooks/wallets';
import type { MembershipOut } from '../api/types';
import { useSession } from '../auth/session';
import { SessionCard } from '../sessions/SessionCard';
import { ADMIN_BASE, useAdminModePreference } from '../shell/adminMode';
import { formatCredits } from '../ui/amount';
import { formatDate, formatRelative } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { RunwayText } from '../wallet/RunwayText';

/** States a session does not leave by itself: the home page shows only the others. */
const ENDED: readonly SessionState[] = ['stopped', 'failed', 'lost'];
const NOTICES_SHOWN = 5;

function Balance() {
  const wallet = useMyWallet();
  return (
    <Paper withBorder p="md" radius="md" component="section" aria-label="Your credits">
      <QueryState query={wallet}>
        {wallet.data && (
          <Group justify="space-between" align="flex-end">
            <div>
              <Text size="sm" c="dimmed">
                Available
              </Text>
              <Text fz={28} fw={700} lh={1.2} style={{ fontVariantNumeric: 'tabular-nums' }}>
                {formatCredits(wallet.data.available)}
              </Text>
              <RunwayText c="dimmed" />
            </div>
            <Button component={Link} to="/wallet" variant="subtle" size="xs">
              History and charges
            </Button>
          </Group>
        )}
      </QueryState>
    </Paper>
  );
}

function CurrentSessions() {
  const sessions = useSessions();
  const current = (sessions.data?.items ?? []).filter((session) => !ENDED.includes(session.state));
  return (
    <Stack gap="sm" component="section" aria-label="Your sessions now">
      <Title order={3} size="h4">
        Running, waiting and paused
      </Title>
      <QueryState
        query={sessions}
        isEmpty={current.length === 0}
        empty="Nothing is running, waiting or paused. Start a session with New session."
      >
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          {current.map((session) => (
            <SessionCard key={session.id} session={session} />
          ))}
        </SimpleGrid>
      </QueryState>
    </Stack>
  );
}

function Notices() {
  const notices = useUnreadNotices(NOTICES_SHOWN);
  if (notices.isPending || notices.error || notices.items.length === 0) return null;
  return (
    <Stack gap="xs" component="section" aria-label="Notices">
      <Title order={3} size="h4">
        Notices
      </Title>
      {notices.items.map((notice) => (
        <Paper key={notice.id} withBorder p="sm" radius="md">
          <Group justify="space-between" align="baseline" wrap="nowrap">
            <Text fw={600} size="sm">
              {notice.title}
            </Text>
            <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
              {formatRelative(notice.created_at)}
            </Text>
          </Group>
          <Text size="sm">{notice.body}</Text>
        </Paper>
      ))}
    </Stack>
  );
}

function MembershipCard({ membership }: { membership: MembershipOut }) {
  return (
    <Card withBorder padding="md" radius="md">
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <div>
          <Text fw={600}>{membership.group_name}</Text>
          <Text size="sm" c="dimmed">
            {membership.org_name}
          </Text>
        </div>
        <Badge variant="light" color={membership.role === 'guest' ? 'grape' : 'blue'}>
          {membership.role}
        </Badge>
      </Group>
      {membership.expires_at && (
        <Text size="xs" c={membership.active ? 'dimmed' : 'red'} mt="sm">
          {membership.active ? 'Guest access until ' : 'Guest access ended '}
          {formatDate(membership.expires_at)}
        </Text>
      )}
    </Card>
  );
}

export function HomePage() {
  const { me, adminMode: isAdmin } = useSession();
  const [adminMode, setAdminMode] = useAdminModePreference(me.user.id);
  const navigate = useNavigate();

  if (isAdmin && adminMode) return <Navigate to={ADMIN_BASE} replace />;

  const memberships = me.memberships;
  return (
    <Stack maw={960}>
      <Title order={2}>Welcome, {me.user.name || me.user.email}</Title>
      <Text c="dimmed">Your groups decide which GPUs you can use.</Text>
      {memberships.some((membership) => membership.active) && (
        <>
          <Group gap="xs">
            <Button component={Link} to="/sessions/new">
              New session
            </Button>
            <Button component={Link} to="/sessions" variant="light">
              Your sessions
            </Button>
          </Group>
          <Balance />
          <Notices />
          <CurrentSessions />
        </>
      )}
      <Title order={3} size="h4" mt="md">
        Your groups
      </Title>
      {memberships.length === 0 && isAdmin ? (
        <Stack gap="xs" align="flex-start">
          <Text c="dimmed" size="sm">
            You are not a member of any group. Organizations, groups, users and credits are managed in admin mode.
          </Text>
          <Button
            variant="light"
            onClick={() => {
              setAdminMode(true);
              navigate(ADMIN_BASE);
            }}
          >
            Open admin mode
          </Button>
        </Stack>
      ) : memberships.length === 0 ? (
        <Text c="dimmed" size="sm">
          You are not a member of any group yet. Ask an administrator to add you.
        </Text>
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
          {memberships.map((membership) => (
            <MembershipCard key={membership.group_id} membership={membership} />
          ))}
        </SimpleGrid>
      )}
    </Stack>
  );
}
