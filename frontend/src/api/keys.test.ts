import { QueryClient, type QueryKey } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import { emptyPage, makeWallet } from '../test/fixtures';
import { json, stubFetch } from '../test/fetchStub';
import { queries, scopes } from './keys';

const startsWith = (key: QueryKey, prefix: QueryKey) => prefix.every((part, index) => key[index] === part);

describe('query keys', () => {
  it('nest every query under the prefix its mutations invalidate', () => {
    const cases: [QueryKey, QueryKey][] = [
      [queries.me().queryKey, scopes.me],
      [queries.orgs('vision', 20).queryKey, scopes.orgLists],
      [queries.org('o1').queryKey, scopes.orgs],
      [queries.orgGroups('o1').queryKey, scopes.groupLists],
      [queries.allOrgGroups('o1').queryKey, scopes.groupLists],
      [queries.group('g1').queryKey, scopes.groups],
      [queries.users({ q: 'ada' }).queryKey, scopes.users],
      [queries.members('g1').queryKey, scopes.members],
      [queries.orgAdmins('o1').queryKey, scopes.admins],
      [queries.groupAdmins('g1').queryKey, scopes.admins],
      [queries.audit({ outcome: 'denied' }).queryKey, scopes.audit],
      [queries.clusters().queryKey, scopes.clusterLists],
      [queries.cluster('c1').queryKey, scopes.clusters],
      [queries.myWallet().queryKey, scopes.wallets],
      [queries.wallet('w1').queryKey, scopes.wallets],
      [queries.walletEntries('w1', { kind: 'capture' }).queryKey, scopes.wallets],
      [queries.walletConsumption('w1', 30).queryKey, scopes.wallets],
      [queries.walletTree('o1').queryKey, scopes.wallets],
      [queries.ledgerCheck().queryKey, scopes.credits],
      [queries.clusterCards('c1').queryKey, scopes.cards],
      [queries.migLayouts('card1').queryKey, scopes.cards],
      [queries.gpuModels().queryKey, scopes.tiers],
      [queries.tiers('g1').queryKey, scopes.tiers],
      [queries.policy('group', 'g1').queryKey, scopes.policies],
      [queries.effectivePolicy('u1', null).queryKey, scopes.policies],
      [queries.queue('all').queryKey, scopes.queue],
      [queries.notifications(false, 20).queryKey, scopes.notifications],
      [queries.unreadNotifications().queryKey, scopes.notifications],
      [queries.usage({ since: '2026-11-01', by: 'group', every: 'day' }).queryKey, scopes.usage],
      [queries.idleSessions('2026-11-01', '2026-11-30').queryKey, scopes.usage],
    ];
    for (const [key, prefix] of cases) expect(startsWith(key, prefix), JSON.stringify(key)).toBe(true);
  });

  it('tell apart what differs and agree on what does not', () => {
    expect(queries.users({ q: 'ada' }).queryKey).toEqual(queries.users({ q: 'ada' }).queryKey);
    expect(queries.users({ q: 'ada' }).queryKey).not.toEqual(queries.users({ q: 'grace' }).queryKey);
    // An empty filter is not sent, so it shares the unfiltered list's key.
    expect(queries.users({ q: '' }).queryKey).toEqual(queries.users().queryKey);
    expect(queries.orgGroups('o1').queryKey).not.toEqual(queries.allOrgGroups('o1').queryKey);
    expect(queries.walletConsumption('w1', 30).queryKey).not.toEqual(queries.walletConsumption('w1', 7).queryKey);
    expect(queries.usage({ by: 'group', user_id: null }).queryKey).toEqual(queries.usage({ by: 'group' }).queryKey);
    expect(queries.usage({ by: 'group' }).queryKey).not.toEqual(queries.usage({ by: 'user' }).queryKey);
  });

  it('fetch from the endpoint they name, with the filters as query parameters', async () => {
    const api = stubFetch({
      'GET /api/v1/users': json(200, emptyPage),
      'GET /api/v1/wallets/w1': json(200, makeWallet({ id: 'w1' })),
    });
    const client = new QueryClient();
    await client.fetchInfiniteQuery(queries.users({ q: 'ada', group_id: 'g1' }));
    expect(Object.fromEntries(api.callsTo('GET', '/api/v1/users')[0].query)).toEqual({
      limit: '50',
      q: 'ada',
      group_id: 'g1',
    });
    expect((await client.fetchQuery(queries.wallet('w1'))).id).toBe('w1');
  });

  it('let one credit movement refresh every wallet view', async () => {
    const client = new QueryClient();
    const walletKeys: QueryKey[] = [
      queries.myWallet().queryKey,
      queries.wallet('w1').queryKey,
      queries.walletConsumption('w1', 30).queryKey,
      queries.walletTree('o1').queryKey,
    ];
    for (const key of walletKeys) client.setQueryData(key, {});
    const orgKey: QueryKey = queries.org('o1').queryKey;
    client.setQueryData(orgKey, {});
    await client.invalidateQueries({ queryKey: scopes.wallets });
    for (const key of walletKeys) expect(client.getQueryState(key)?.isInvalidated).toBe(true);
    expect(client.getQueryState(orgKey)?.isInvalidated).toBe(false);
  });
});
