import type { AuditOutcome, EntryKind } from './types';

/** Query filters of the list endpoints, as the console sends them. */
export interface UserFilters {
  q?: string;
  org_id?: string;
  group_id?: string;
  limit?: number;
}

export interface AuditFilters {
  action?: string;
  outcome?: AuditOutcome;
  actor_id?: string;
  target_type?: string;
  target_id?: string;
  org_id?: string;
  group_id?: string;
  since?: string;
  until?: string;
  /** Oldest first (`at`); newest first when absent. */
  sort?: 'at' | '-at';
}

export interface EntryFilters {
  kind?: EntryKind;
  since?: string;
  until?: string;
}
