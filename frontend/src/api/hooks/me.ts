import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../client';
import { setCsrfToken } from '../csrf';
import { isApiError } from '../errors';
import { ME_KEY } from '../keys';
import type { MeOut } from '../types';

export async function fetchMe(): Promise<MeOut | null> {
  try {
    const me = await unwrap(api.GET('/api/v1/me'));
    setCsrfToken(me.csrf_token);
    return me;
  } catch (error) {
    if (isApiError(error, 401)) {
      setCsrfToken(null);
      return null;
    }
    throw error;
  }
}

/** The signed-in user; `null` when there is no session. */
export function useMe() {
  return useQuery({ queryKey: ME_KEY, queryFn: fetchMe, staleTime: 60_000 });
}
