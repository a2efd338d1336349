import { useQuery } from '@tanstack/react-query';
import { queries } from '../keys';

/** The signed-in user; `null` when there is no session. */
export function useMe() {
  return useQuery(queries.me());
}
