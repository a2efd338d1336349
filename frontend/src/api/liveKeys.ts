import type { QueryClient, QueryKey } from '@tanstack/react-query';
import { scopes } from './keys';

/** What one live event makes stale: some key prefixes, or everything (`all`). */
export type LiveInvalidation = 'all' | readonly QueryKey[];

/**
 * Every event kind the console reacts to, and the queries it makes stale. Events carry only
 * what changed, not the new state, so the affected queries are fetched again rather than
 * patched. Kinds not listed here are ignored.
 */
const invalidations = new Map<string, LiveInvalidation>([
  ['wallet.changed', [scopes.wallets]],
  ['notification.created', [scopes.notifications]],
  ['notifications.read', [scopes.notifications]],
  // Admitting or ending a request changes the queue, who occupies which card, and the tiers'
  // free slots (New session, and what would start a waiting session now).
  ['admission.changed', [scopes.queue, scopes.cards, scopes.tiers]],
  // A session moved on: its card, its place in the queue, the volumes it holds, and how much of
  // its group's running booking is in use.
  ['session.changed', [scopes.queue, scopes.cards, scopes.sessions, scopes.volumes, scopes.bookings]],
  // A waiting request's start forecast moved: the queue and the waiting session's card.
  ['forecast.changed', [scopes.queue, scopes.sessions]],
  // A booking was made, changed or cancelled: the calendars, the lists and New session's note.
  ['booking.changed', [scopes.bookings]],
  // A session was given notice, or its notice ended: the queue (and its notices), the card
  // pictures and drains, and the sessions' banners.
  ['notice.changed', [scopes.queue, scopes.cards, scopes.sessions]],
  // A cluster reported its cards, or a card's pool or MIG layout changed: what can be booked.
  ['cards.changed', [scopes.cards, scopes.clusters, scopes.bookings]],
  // Roles decide what every other answer contains.
  ['account.changed', 'all'],
  // Events were missed beyond what the server keeps.
  ['reset', 'all'],
]);

export const liveEventKinds: readonly string[] = [...invalidations.keys()];

export function invalidationsFor(kind: string): LiveInvalidation {
  return invalidations.get(kind) ?? [];
}

export async function applyLiveEvent(client: QueryClient, kind: string): Promise<void> {
  const stale = invalidationsFor(kind);
  if (stale === 'all') return client.invalidateQueries();
  await Promise.all(stale.map((queryKey) => client.invalidateQueries({ queryKey })));
}
