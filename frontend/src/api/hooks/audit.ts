import { api, compact, unwrap } from '../client';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { AuditEntryOut, AuditOutcome } from '../types';

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
}

export function useAudit(filters: AuditFilters) {
  const query = compact({ limit: PAGE_SIZE, ...filters });
  return usePaged<AuditEntryOut>([...keys.audit, query], (cursor) =>
    unwrap(api.GET('/api/v1/audit', { params: { query: compact({ ...query, cursor }) } })),
  );
}
