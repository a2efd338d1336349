import type { AuditFilters } from '../filters';
import { queries } from '../keys';
import { usePaged } from '../paged';
import type { AuditEntryOut } from '../types';

export type { AuditFilters } from '../filters';

export function useAudit(filters: AuditFilters) {
  return usePaged<AuditEntryOut>(queries.audit(filters));
}
