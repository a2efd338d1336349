import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../client';
import { queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { NotificationOut } from '../types';

/** The latest notifications for the bell; `enabled` holds the list back until it is opened. */
export function useNotifications(limit: number, enabled = true) {
  return usePaged<NotificationOut>(queries.notifications(false, limit), enabled);
}

/** The newest unread notifications, for the home page. */
export function useUnreadNotices(limit: number) {
  return usePaged<NotificationOut>(queries.notifications(true, limit));
}

export function useUnreadNotifications() {
  return useQuery(queries.unreadNotifications());
}

/** Marking read is idempotent on the server, so neither mutation needs an idempotency key. */
export function useMarkNotificationRead() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (notificationId: string) =>
      unwrap(
        api.POST('/api/v1/notifications/{notification_id}/read', {
          params: { path: { notification_id: notificationId } },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.notifications }),
  });
}

export function useMarkAllNotificationsRead() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/notifications/read-all')),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.notifications }),
  });
}
