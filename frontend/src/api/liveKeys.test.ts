import { QueryClient, type QueryKey } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import { queries, scopes } from './keys';
import { applyLiveEvent, invalidationsFor, liveEventKinds } from './liveKeys';

/** A client holding fresh data under one key per view the console has. */
function clientWithViews() {
  const client = new QueryClient();
  const views: Record<string, QueryKey> = {
    me: queries.me().queryKey,
    myWallet: queries.myWallet().queryKey,
    wallet: queries.wallet('w1').queryKey,
    walletTree: queries.walletTree('o1').queryKey,
    walletEntries: queries.walletEntries('w1').queryKey,
    notifications: queries.notifications().queryKey,
    unread: queries.unreadNotifications().queryKey,
    queue: queries.queue('own').queryKey,
    cards: queries.clusterCards('c1').queryKey,
    org: queries.org('o1').queryKey,
    sessions: queries.sessions().queryKey,
    adminSessions: queries.sessions({ scope: 'admin', state: ['running'] }).queryKey,
    session: queries.session('s1').queryKey,
    volumes: queries.volumes().queryKey,
    groupVolumes: queries.groupVolumes('g1').queryKey,
    preview: queries.admissionPreview({ group_id: 'g1', tier_id: null, cpu_cores: 1, memory_mib: 2048 }).queryKey,
    catalog: queries.catalog().queryKey,
    tiers: queries.tiers('g1').queryKey,
  };
  for (const key of Object.values(views)) client.setQueryData(key, {});
  const stale = () =>
    Object.entries(views)
      .filter(([, key]) => client.getQueryState(key)?.isInvalidated)
      .map(([name]) => name)
      .sort();
  return { client, stale };
}

describe('live event keys', () => {
  it('map every kind to the scopes it changes', () => {
    expect(invalidationsFor('wallet.changed')).toEqual([scopes.wallets]);
    expect(invalidationsFor('notification.created')).toEqual([scopes.notifications]);
    expect(invalidationsFor('notifications.read')).toEqual([scopes.notifications]);
    expect(invalidationsFor('admission.changed')).toEqual([scopes.queue, scopes.cards, scopes.tiers]);
    expect(invalidationsFor('forecast.changed')).toEqual([scopes.queue, scopes.sessions]);
    expect(invalidationsFor('session.changed')).toEqual([scopes.queue, scopes.cards, scopes.sessions, scopes.volumes, scopes.bookings]);
    expect(invalidationsFor('booking.changed')).toEqual([scopes.bookings]);
    expect(invalidationsFor('cards.changed')).toEqual([scopes.cards, scopes.clusters, scopes.bookings]);
    expect(invalidationsFor('notice.changed')).toEqual([scopes.queue, scopes.cards, scopes.sessions]);
    expect(invalidationsFor('account.changed')).toBe('all');
    expect(invalidationsFor('reset')).toBe('all');
    expect([...liveEventKinds].sort()).toEqual([
      'account.changed',
      'admission.changed',
      'booking.changed',
      'cards.changed',
      'forecast.changed',
      'notice.changed',
      'notification.created',
      'notifications.read',
      'reset',
      'session.changed',
      'wallet.changed',
    ]);
  });

  it('map unknown kinds to nothing', () => {
    for (const kind of ['session.started', 'message', '', 'constructor', 'toString']) {
      expect(invalidationsFor(kind)).toEqual([]);
    }
  });

  it('make a wallet change refresh the wallet page and the credits tree, and nothing else', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'wallet.changed');
    expect(stale()).toEqual(['myWallet', 'wallet', 'walletEntries', 'walletTree']);
  });

  it('make a new notification refresh the bell', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'notification.created');
    expect(stale()).toEqual(['notifications', 'unread']);
  });

  it('make an admission refresh the queue, the cards, the admission preview and the tiers', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'admission.changed');
    expect(stale()).toEqual(['cards', 'preview', 'queue', 'tiers']);
  });

  it('make a session change refresh the session lists, its detail, the volumes, the queue and the cards', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'session.changed');
    expect(stale()).toEqual([
      'adminSessions',
      'cards',
      'groupVolumes',
      'preview',
      'queue',
      'session',
      'sessions',
      'volumes',
    ]);
  });

  it('make a notice refresh the queue, the cards and the sessions, but not the volumes', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'notice.changed');
    expect(stale()).toEqual(['adminSessions', 'cards', 'preview', 'queue', 'session', 'sessions']);
  });

  it('make a reset or an account change refresh everything, the signed-in user included', async () => {
    for (const kind of ['reset', 'account.changed']) {
      const { client, stale } = clientWithViews();
      await applyLiveEvent(client, kind);
      expect(stale()).toContain('me');
      expect(stale()).toHaveLength(18);
    }
  });

  it('leave the cache alone for an unknown kind', async () => {
    const { client, stale } = clientWithViews();
    await applyLiveEvent(client, 'session.started');
    expect(stale()).toEqual([]);
  });
});
