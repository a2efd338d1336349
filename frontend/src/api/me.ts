import { api, unwrap } from './client';
import { setCsrfToken } from './csrf';
import { isApiError } from './errors';
import type { MeOut } from './types';

/** The signed-in user, or `null` when there is no session; keeps the CSRF token current. */
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
