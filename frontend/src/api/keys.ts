import { infiniteQueryOptions, queryOptions, type QueryKey } from '@tanstack/react-query';
import type { AuditFilters, EntryFilters, UserFilters } from './filters';
import type { components } from './schema';
import type { PolicyScope, UsageQuery } from './types';
import { api, compact, unwrap } from './client';
import { fetchMe } from './me';

/**
 * Every query the console makes, with its key, built here and nowhere else. Keys nest under
 * the prefixes in `scopes`, so a mutation invalidates everything it may have changed with one
 * prefix (every credit movement invalidates `scopes.wallets` as a whole).
 */
export const scopes = {
  me: ['me'],
  orgs: ['orgs'],
  orgLists: ['orgs', 'list'],
  groups: ['groups'],
  groupLists: ['groups', 'by-org'],
  users: ['users'],
  members: ['members'],
  admins: ['admins'],
  audit: ['audit'],
  clusters: ['clusters'],
  clusterLists: ['clusters', 'list'],
  isolation: ['isolation'],
  cards: ['cards'],
  tiers: ['tiers'],
  policies: ['policies'],
  queue: ['queue'],
  wallets: ['wallets'],
  credits: ['credits'],
  notifications: ['notifications'],
  sessions: ['sessions'],
  volumes: ['volumes'],
  catalog: ['catalog'],
  worker: ['worker'],
  bookings: ['bookings'],
  shares: ['shares'],
  usage: ['usage'],
  passwordCheck: ['password-check'],
} as const satisfies Record<string, QueryKey>;

export const PAGE_SIZE = 50;

/** The longest password the server takes (PasswordCheckRequest, PasswordChangeRequest). */
export const PASSWORD_MAX_LENGTH = 1024;

/** `mine`: the caller's sessions; `admin`: every session in the groups the caller administers. */
export interface SessionFilters {
  scope?: 'mine' | 'admin';
  state?: components['schemas']['SessionOut']['state'][];
  group_id?: string;
}

type AdmissionPreviewIn = components['schemas']['AdmissionPreviewIn'];
type BookingIn = components['schemas']['BookingIn'];

/** Which bookings to list: of a group, of a GPU model; `ended` adds ended and cancelled ones. */
export interface BookingFilters {
  group_id?: string;
  model?: string;
  ended?: boolean;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** One cursor-paginated list: every list endpoint answers `{ items, next_cursor }`. */
function paged<T>(queryKey: QueryKey, fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {
  return infiniteQueryOptions({
    queryKey,
    queryFn: ({ pageParam }) => fetchPage(pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last: Page<T>) => last.next_cursor ?? undefined,
  });
}

const groupPage = (orgId: string, limit: number) => (cursor: string | undefined) =>
  unwrap(
    api.GET('/api/v1/orgs/{org_id}/groups', { params: { path: { org_id: orgId }, query: compact({ limit, cursor }) } }),
  );

function fetchPolicy(scope: PolicyScope, scopeId: string | null) {
  if (scope === 'global' || scopeId === null) return unwrap(api.GET('/api/v1/policies/global'));
  const params = { params: { path: { scope_id: scopeId } } };
  if (scope === 'organization') return unwrap(api.GET('/api/v1/policies/orgs/{scope_id}', params));
  if (scope === 'group') return unwrap(api.GET('/api/v1/policies/groups/{scope_id}', params));
  return unwrap(api.GET('/api/v1/policies/users/{scope_id}', params));
}

export const queries = {
  me: () => queryOptions({ queryKey: scopes.me, queryFn: fetchMe, staleTime: 60_000 }),

  orgs: (q = '', limit = PAGE_SIZE) =>
    paged([...scopes.orgLists, q, limit], (cursor) =>
      unwrap(api.GET('/api/v1/orgs', { params: { query: compact({ q, limit, cursor }) } })),
    ),
  org: (orgId: string) =>
    queryOptions({
      queryKey: [...scopes.orgs, 'detail', orgId],
      queryFn: () => unwrap(api.GET('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } } })),
    }),

  orgGroups: (orgId: string, limit = PAGE_SIZE) => paged([...scopes.groupLists, orgId, limit], groupPage(orgId, limit)),
  group: (groupId: string) =>
    queryOptions({
      queryKey: [...scopes.groups, 'detail', groupId],
      queryFn: () => unwrap(api.GET('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } } })),
    }),
  /** The first page (up to 200) of an organization's groups, for pickers. */
  allOrgGroups: (orgId: string) =>
    queryOptions({
      queryKey: [...scopes.groupLists, orgId, 'all'],
      queryFn: () => groupPage(orgId, 200)(undefined),
    }),

  users: (filters: UserFilters = {}) => {
    const query = compact({ limit: PAGE_SIZE, ...filters });
    return paged([...scopes.users, 'list', query], (cursor) =>
      unwrap(api.GET('/api/v1/users', { params: { query: compact({ ...query, cursor }) } })),
    );
  },

  members: (groupId: string) =>
    paged([...scopes.members, groupId], (cursor) =>
      unwrap(
        api.GET('/api/v1/groups/{group_id}/members', {
          params: { path: { group_id: groupId }, query: compact({ limit: PAGE_SIZE, cursor }) },
        }),
      ),
    ),

  orgAdmins: (orgId: string) =>
    paged([...scopes.admins, 'org', orgId], (cursor) =>
      unwrap(
        api.GET('/api/v1/orgs/{org_id}/admins', {
          params: { path: { org_id: orgId }, query: compact({ limit: PAGE_SIZE, cursor }) },
        }),
      ),
    ),
  groupAdmins: (groupId: string) =>
    paged([...scopes.admins, 'group', groupId], (cursor) =>
      unwrap(
        api.GET('/api/v1/groups/{group_id}/admins', {
          params: { path: { group_id: groupId }, query: compact({ limit: PAGE_SIZE, cursor }) },
        }),
      ),
    ),

  audit: (filters: AuditFilters) => {
    const query = compact({ limit: PAGE_SIZE, ...filters });
    return paged([...scopes.audit, query], (cursor) =>
      unwrap(api.GET('/api/v1/audit', { params: { query: compact({ ...query, cursor }) } })),
    );
  },

  clusters: (limit = PAGE_SIZE) =>
    paged([...scopes.clusterLists, limit], (cursor) =>
      unwrap(api.GET('/api/v1/clusters', { params: { query: compact({ limit, cursor }) } })),
    ),
  cluster: (clusterId: string) =>
    queryOptions({
      queryKey: [...scopes.clusters, 'detail', clusterId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/clusters/{cluster_id}', { params: { path: { cluster_id: clusterId } } })),
    }),

  /** Every node with cards: what it offers to isolation levels and whom it is dedicated to. */
  isolationNodes: () =>
    queryOptions({
      queryKey: [...scopes.isolation, 'nodes'],
      queryFn: () => unwrap(api.GET('/api/v1/isolation/nodes')),
    }),
  /** An organization's level, where its sessions ran in the last 30 days, and its incidents. */
  orgIsolation: (orgId: string) =>
    queryOptions({
      queryKey: [...scopes.isolation, 'org', orgId],
      queryFn: () => unwrap(api.GET('/api/v1/orgs/{org_id}/isolation', { params: { path: { org_id: orgId } } })),
    }),

  /** Every card of a cluster with its pool, carving, occupants and MIG instances (one answer). */
  clusterCards: (clusterId: string) =>
    queryOptions({
      queryKey: [...scopes.cards, 'cluster', clusterId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/clusters/{cluster_id}/cards', { params: { path: { cluster_id: clusterId } } })),
    }),
  /** The full MIG layouts a card's GPU accepts; they never change, so they are kept. */
  migLayouts: (cardId: string) =>
    queryOptions({
      queryKey: [...scopes.cards, 'mig-layouts', cardId],
      queryFn: () => unwrap(api.GET('/api/v1/cards/{card_id}/mig-layouts', { params: { path: { card_id: cardId } } })),
      staleTime: Infinity,
    }),

  /** GPU models with all their tiers, retired ones included (capacity admins). */
  gpuModels: () =>
    queryOptions({
      queryKey: [...scopes.tiers, 'models'],
      queryFn: () => unwrap(api.GET('/api/v1/gpu-models')),
    }),

  /** The tiers on offer (to a group's members when `groupId` is given), with their prices. */
  tiers: (groupId: string | null = null) =>
    queryOptions({
      queryKey: [...scopes.tiers, 'offered', groupId],
      queryFn: () => unwrap(api.GET('/api/v1/tiers', { params: { query: compact({ group_id: groupId }) } })),
    }),

  /** One scope's own policy document (the keys it sets). */
  policy: (scope: PolicyScope, scopeId: string | null) =>
    queryOptions({
      queryKey: [...scopes.policies, scope, scopeId],
      queryFn: () => fetchPolicy(scope, scopeId),
    }),
  effectivePolicy: (userId: string, groupId: string | null) =>
    queryOptions({
      queryKey: [...scopes.policies, 'effective', userId, groupId],
      queryFn: () =>
        unwrap(
          api.GET('/api/v1/users/{user_id}/effective-policy', {
            params: { path: { user_id: userId }, query: compact({ group_id: groupId }) },
          }),
        ),
    }),

  /** `own`: the caller's requests; `all`: every request in the groups the caller administers. */
  queue: (scope: 'own' | 'all') =>
    queryOptions({
      queryKey: [...scopes.queue, scope],
      queryFn: () => unwrap(api.GET('/api/v1/queue', { params: { query: { scope } } })),
    }),

  myWallet: () =>
    queryOptions({ queryKey: [...scopes.wallets, 'me'], queryFn: () => unwrap(api.GET('/api/v1/wallets/me')) }),
  wallet: (walletId: string) =>
    queryOptions({
      queryKey: [...scopes.wallets, 'detail', walletId],
      queryFn: () => unwrap(api.GET('/api/v1/wallets/{wallet_id}', { params: { path: { wallet_id: walletId } } })),
    }),
  walletEntries: (walletId: string, filters: EntryFilters = {}) => {
    const query = compact({ limit: PAGE_SIZE, ...filters });
    return paged([...scopes.wallets, 'entries', walletId, query], (cursor) =>
      unwrap(
        api.GET('/api/v1/wallets/{wallet_id}/entries', {
          params: { path: { wallet_id: walletId }, query: compact({ ...query, cursor }) },
        }),
      ),
    );
  },
  walletConsumption: (walletId: string, days: number) =>
    queryOptions({
      queryKey: [...scopes.wallets, 'consumption', walletId, days],
      queryFn: () =>
        unwrap(
          api.GET('/api/v1/wallets/{wallet_id}/consumption', {
            params: { path: { wallet_id: walletId }, query: { days } },
          }),
        ),
    }),
  walletTree: (orgId: string) =>
    queryOptions({
      queryKey: [...scopes.wallets, 'tree', orgId],
      queryFn: () => unwrap(api.GET('/api/v1/orgs/{org_id}/wallet-tree', { params: { path: { org_id: orgId } } })),
    }),

  /** Sessions, newest first; one answer, not paged. */
  sessions: (filters: SessionFilters = {}) => {
    const query = compact({ scope: 'mine' as const, ...filters, state: filters.state?.length ? filters.state : undefined });
    return queryOptions({
      queryKey: [...scopes.sessions, 'list', query],
      queryFn: () => unwrap(api.GET('/api/v1/sessions', { params: { query } })),
    });
  },
  /** One session with its state history. */
  session: (sessionId: string) =>
    queryOptions({
      queryKey: [...scopes.sessions, 'detail', sessionId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/sessions/{session_id}', { params: { path: { session_id: sessionId } } })),
    }),
  /**
   * A session's GPU use and cost over its life. Under the sessions prefix, so each live
   * `session.changed` event asks for it again.
   */
  sessionUsage: (sessionId: string) =>
    queryOptions({
      queryKey: [...scopes.sessions, 'usage', sessionId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/sessions/{session_id}/usage', { params: { path: { session_id: sessionId } } })),
    }),
  /**
   * What admission would do with a session of this shape now. It reads the queue, so it sits
   * under the queue's prefix and is asked again whenever admissions change.
   */
  admissionPreview: (body: AdmissionPreviewIn) =>
    queryOptions({
      queryKey: [...scopes.queue, 'preview', body],
      queryFn: () => unwrap(api.POST('/api/v1/admission/preview', { body })),
    }),

  /** How the worker's loops fare, and which clusters' GPU metrics cannot be read. */
  workerHealth: () =>
    queryOptions({
      queryKey: [...scopes.worker, 'health'],
      queryFn: () => unwrap(api.GET('/api/v1/worker/health')),
      refetchInterval: 30_000,
    }),

  /** Session images; `includeDisabled` (catalog admins) lists the disabled ones too. */
  catalog: (includeDisabled = false) =>
    queryOptions({
      queryKey: [...scopes.catalog, includeDisabled],
      queryFn: () =>
        unwrap(api.GET('/api/v1/catalog', { params: { query: includeDisabled ? { include_disabled: true } : {} } })),
    }),

  /** The caller's home volumes and their groups' shared ones, with the sessions using each. */
  volumes: () =>
    queryOptions({ queryKey: [...scopes.volumes, 'mine'], queryFn: () => unwrap(api.GET('/api/v1/volumes')) }),
  groupVolumes: (groupId: string) =>
    queryOptions({
      queryKey: [...scopes.volumes, 'group', groupId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/groups/{group_id}/volumes', { params: { path: { group_id: groupId } } })),
    }),

  /** A group's GPU use against its share, its organization's groups, and (admins) its members'. */
  groupShare: (groupId: string) =>
    queryOptions({
      queryKey: [...scopes.shares, groupId],
      queryFn: () =>
        unwrap(api.GET('/api/v1/groups/{group_id}/fair-share', { params: { path: { group_id: groupId } } })),
    }),

  /**
   * GPU hours, idle GPU hours and credits over a period of UTC days, per key of `by`, with a
   * series per `every`: the caller's own use and that of what they administer (the server
   * decides). It changes slowly and no live event names it: pages ask again every few minutes.
   */
  usage: (query: UsageQuery) => {
    const params = compact({ ...query });
    return queryOptions({
      queryKey: [...scopes.usage, 'report', params],
      queryFn: () => unwrap(api.GET('/api/v1/usage', { params: { query: params } })),
    });
  },
  /** The sessions that held a card idle longest over the period (at most 20), most idle first. */
  /** What the caller's recent sessions of an image on a tier say about its size. */
  sizing: (image: string, tierId: string) =>
    queryOptions({
      queryKey: [...scopes.usage, 'sizing', image, tierId],
      queryFn: () => unwrap(api.GET('/api/v1/usage/sizing', { params: { query: { image, tier_id: tierId } } })),
    }),

  /** A wallet's low-credit alert and how long its balance lasts at the rate billed now. */
  walletAlert: (walletId: string) =>
    queryOptions({
      queryKey: [...scopes.wallets, walletId, 'alert'],
      queryFn: () => unwrap(api.GET('/api/v1/wallets/{wallet_id}/alert', { params: { path: { wallet_id: walletId } } })),
    }),

  idleSessions: (since: string, until: string) =>
    queryOptions({
      queryKey: [...scopes.usage, 'idle-sessions', since, until],
      queryFn: () => unwrap(api.GET('/api/v1/usage/idle-sessions', { params: { query: { since, until } } })),
    }),

  /** The bookings of the caller's groups (every one for the super admin), soonest first. */
  bookings: (filters: BookingFilters = {}) => {
    const query = compact({ ...filters });
    return queryOptions({
      queryKey: [...scopes.bookings, 'list', query],
      queryFn: () => unwrap(api.GET('/api/v1/bookings', { params: { query } })),
    });
  },
  /** Booked and free capacity of a GPU model over a window (at most 62 days). */
  bookingCalendar: (model: string, startsAt: string, endsAt: string) =>
    queryOptions({
      queryKey: [...scopes.bookings, 'calendar', model, startsAt, endsAt],
      queryFn: () =>
        unwrap(
          api.GET('/api/v1/bookings/calendar', { params: { query: { model, starts_at: startsAt, ends_at: endsAt } } }),
        ),
    }),
  /**
   * Whether a booking would be accepted now; books nothing. Under the bookings' prefix, so it is
   * asked again whenever bookings change.
   */
  bookingCheck: (body: BookingIn) =>
    queryOptions({
      queryKey: [...scopes.bookings, 'check', body],
      queryFn: () => unwrap(api.POST('/api/v1/bookings/check', { body })),
    }),

  /** The caller's notifications, newest first. */
  notifications: (unreadOnly = false, limit = PAGE_SIZE) =>
    paged([...scopes.notifications, 'list', unreadOnly, limit], (cursor) =>
      unwrap(
        api.GET('/api/v1/notifications', {
          params: { query: compact({ limit, cursor, unread_only: unreadOnly }) },
        }),
      ),
    ),
  unreadNotifications: () =>
    queryOptions({
      queryKey: [...scopes.notifications, 'unread-count'],
      queryFn: () => unwrap(api.GET('/api/v1/notifications/unread-count')),
    }),

  /** The ledger's self-check (super admin); runs only when asked for. */
  ledgerCheck: () =>
    queryOptions({
      queryKey: [...scopes.credits, 'check'],
      queryFn: () => unwrap(api.GET('/api/v1/credits/check')),
      enabled: false,
      staleTime: 0,
    }),

  /** The server's strength verdict for a candidate password. */
  passwordCheck: (password: string, email: string | null, name: string | null) =>
    queryOptions({
      queryKey: [...scopes.passwordCheck, password, email, name],
      queryFn: () => unwrap(api.POST('/api/v1/auth/password-check', { body: { password, email, name } })),
      enabled: password.length > 0 && password.length <= PASSWORD_MAX_LENGTH,
      staleTime: Infinity,
      gcTime: 30_000,
    }),
};
