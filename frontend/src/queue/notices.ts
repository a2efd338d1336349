/** Notices given to running sessions (preemptions and drains), in words, and the admins' list of them. */
import { queryOptions, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { scopes } from '../api/keys';
import type { components } from '../api/schema';

type Schemas = components['schemas'];

export type NoticeOut = Schemas['gshare__capacity__schemas__NoticeOut'];
export type SessionNoticeOut = Schemas['gshare__sessions__schemas__NoticeOut'];
export type PreemptionCountOut = Schemas['PreemptionCountOut'];
export type NoticeKind = NoticeOut['kind'];
export type NoticeReason = NoticeOut['reason'];

export const NOTICE_KINDS: Record<NoticeKind, string> = {
  preemption: 'Preemption',
  drain: 'Drain',
};

export const NOTICE_REASONS: Record<NoticeReason, string> = {
  fair_share: 'Fair share: its group had more than its share',
  waited_too_long: 'A request waited too long',
  priority: 'A request of higher priority',
  booking: 'Its card is booked by another group',
  booking_start: 'A booking of its card by another group starts',
  drain: 'Maintenance',
  xid: 'Hardware error on the card',
};

/**
 * The notices still running in the groups the caller administers, with each group's
 * preemption counts over the last 30 days. Under the queue's prefix: what admits a request or
 * frees a card for one changes them too, and `notice.changed` refreshes the queue.
 */
export const noticesQuery = () =>
  queryOptions({
    queryKey: [...scopes.queue, 'notices', 'pending', 30],
    queryFn: () => unwrap(api.GET('/api/v1/notices', { params: { query: { pending: true, days: 30 } } })),
  });

export function usePendingNotices() {
  return useQuery(noticesQuery());
}
