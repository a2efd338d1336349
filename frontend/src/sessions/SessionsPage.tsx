import { Button, SimpleGrid, Stack } from '@mantine/core';
import { Link } from 'react-router';
import { useSessions } from '../api/hooks/sessions';
import { useSession } from '../auth/session';
import { PageHeader } from '../ui/PageHeader';
import { QueryState } from '../ui/QueryState';
import { SessionCard } from './SessionCard';

/** The caller's sessions as cards, kept current by live updates. */
export function SessionsPage() {
  const { me } = useSession();
  const sessions = useSessions();
  const items = sessions.data?.items ?? [];
  // A session runs for one of the caller's groups; without one there is nothing to start.
  const canStart = me.memberships.some((membership) => membership.active);
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Sessions"
        description="Your VS Code, JupyterLab and terminal sessions, with what each costs."
        actions={
          canStart && (
            <Button component={Link} to="/sessions/new">
              New session
            </Button>
          )
        }
      />
      <QueryState
        query={sessions}
        isEmpty={items.length === 0}
        empty={
          canStart
            ? 'You have no sessions yet. Start one with New session.'
            : 'You have no sessions. Sessions run for a group; ask an administrator to add you to one.'
        }
      >
        <SimpleGrid cols={{ base: 1, md: 2, xl: 3 }}>
          {items.map((session) => (
            <SessionCard key={session.id} session={session} />
          ))}
        </SimpleGrid>
      </QueryState>
    </Stack>
  );
}
