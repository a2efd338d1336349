import {
  ActionIcon,
  Box,
  Button,
  Group,
  Indicator,
  Popover,
  ScrollArea,
  Stack,
  Text,
  UnstyledButton,
} from '@mantine/core';
import { useId, useState } from 'react';
import {
  useMarkAllNotificationsRead,
  useMarkNotificationRead,
  useNotifications,
  useUnreadNotifications,
} from '../api/hooks/notifications';
import type { NotificationOut } from '../api/types';
import { errorMessage } from '../api/errors';
import { formatDateTime, formatRelative } from '../ui/format';
import { QueryState } from '../ui/QueryState';

export const LATEST_NOTIFICATIONS = 20;
const MAX_BADGE = 99;

function BellIcon() {
  return (
    <svg
      width={20}
      height={20}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth={2}
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
    >
      <path d="M6 8a6 6 0 1 1 12 0c0 7 3 9 3 9H3s3-2 3-9" />
      <path d="M10.3 21a1.94 1.94 0 0 0 3.4 0" />
    </svg>
  );
}

function NotificationItem({ item, onOpen }: { item: NotificationOut; onOpen: (item: NotificationOut) => void }) {
  const unread = item.read_at === null;
  return (
    <UnstyledButton
      onClick={() => onOpen(item)}
      p="xs"
      w="100%"
      bg={unread ? 'var(--mantine-color-blue-light)' : undefined}
      style={{ borderRadius: 'var(--mantine-radius-sm)' }}
    >
      <Group justify="space-between" wrap="nowrap" align="baseline" gap="xs">
        <Text size="sm" fw={unread ? 700 : 500} lineClamp={2}>
          {item.title}
        </Text>
        <Text size="xs" c="dimmed" title={formatDateTime(item.created_at)} style={{ flexShrink: 0 }}>
          {formatRelative(item.created_at)}
        </Text>
      </Group>
      {item.body && (
        <Text size="xs" c="dimmed" mt={2}>
          {item.body}
        </Text>
      )}
      {unread && (
        <Text size="xs" c="blue.8" fw={600}>
          Unread
        </Text>
      )}
    </UnstyledButton>
  );
}

/** The bell in the top bar: the unread count, and the latest notifications when opened. */
export function NotificationBell() {
  const [opened, setOpened] = useState(false);
  const headingId = useId();
  const unread = useUnreadNotifications();
  const list = useNotifications(LATEST_NOTIFICATIONS, opened);
  const markRead = useMarkNotificationRead();
  const markAllRead = useMarkAllNotificationsRead();
  const count = unread.data?.unread ?? 0;
  const label = count > 0 ? `Notifications, ${count} unread` : 'Notifications';

  const markReadOnOpen = (item: NotificationOut) => {
    if (item.read_at === null) markRead.mutate(item.id);
  };

  return (
    // The header is fixed, so the bell is never scrolled out of view under its open list.
    <Popover opened={opened} onChange={setOpened} position="bottom-end" width={360} shadow="md" hideDetached={false}>
      <Indicator
        label={count > MAX_BADGE ? `${MAX_BADGE}+` : count}
        size={16}
        offset={4}
        color="red"
        disabled={count === 0}
      >
        <Popover.Target>
          <ActionIcon
            variant="subtle"
            color="gray"
            size="lg"
            aria-label={label}
            onClick={() => setOpened((was) => !was)}
          >
            <BellIcon />
          </ActionIcon>
        </Popover.Target>
      </Indicator>
      <Popover.Dropdown p="xs" aria-labelledby={headingId}>
        <Group justify="space-between" px="xs" pb="xs">
          <Text id={headingId} fw={600}>
            Notifications
          </Text>
          <Button
            size="compact-xs"
            variant="subtle"
            disabled={count === 0}
            loading={markAllRead.isPending}
            onClick={() => markAllRead.mutate()}
          >
            Mark all read
          </Button>
        </Group>
        {(markRead.error || markAllRead.error) && (
          <Text size="xs" c="red" px="xs" pb="xs" role="alert">
            {errorMessage(markRead.error ?? markAllRead.error)}
          </Text>
        )}
        <ScrollArea.Autosize mah={420}>
          <Box px="xs">
            <QueryState query={list} isEmpty={list.items.length === 0} empty="No notifications yet.">
              <Stack gap={4}>
                {list.items.map((item) => (
                  <NotificationItem key={item.id} item={item} onOpen={markReadOnOpen} />
                ))}
              </Stack>
              {list.hasNextPage && (
                <Group justify="center" mt="xs">
                  <Button
                    size="compact-xs"
                    variant="default"
                    onClick={list.fetchNextPage}
                    loading={list.isFetchingNextPage}
                  >
                    Load more
                  </Button>
                </Group>
              )}
            </QueryState>
          </Box>
        </ScrollArea.Autosize>
      </Popover.Dropdown>
    </Popover>
  );
}
