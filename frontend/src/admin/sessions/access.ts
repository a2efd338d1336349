import type { Action } from '../../auth/capabilities';

/** Managing the session catalog: super admins only. */
export const CATALOG_MANAGE: Action = 'catalog.manage';
/** Reading every session in the groups one administers: any admin. */
export const SESSIONS_READ_SCOPE: Action = 'session.read_scope';
/** The worker's loops and the clusters' metrics: super admins only. */
export const WORKER_HEALTH: Action = 'worker.health';
/** Administering a group's shared volumes. */
export const ADMINISTERS_GROUP: Action = 'volume.manage_group';
