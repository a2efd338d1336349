/** What the member form holds (who, which role, until when), and the schema that says what it may hold. */
import { z } from 'zod';
import type { MembershipRole } from '../../api/types';
import { fromDateInput, toDateInput } from '../../ui/format';
import { validateWith } from '../../ui/form';

export type MemberValues = {
  userId: string | null;
  role: MembershipRole;
  /** A local date as `YYYY-MM-DD` (the picker's value), '' for none; only a guest's counts. */
  expires: string;
};

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** `today`: the local date now, as `YYYY-MM-DD` (passed in, so the schema reads no clock). */
export function memberSchema(today: string) {
  return z
    .object({
      userId: z.string().nullable().refine((value) => value !== null, { error: 'Choose a user.' }),
      role: z.enum(['member', 'guest']),
      expires: z.string(),
    })
    .superRefine(({ role, expires }, ctx) => {
      if (role !== 'guest' || !expires) return;
      // fromDateInput refuses what is no date (and a year past what Date can hold).
      if (!DATE.test(expires) || fromDateInput(expires) === null) {
        ctx.addIssue({ code: 'custom', path: ['expires'], message: 'Choose a date from the calendar.' });
      } else if (expires < today) {
        ctx.addIssue({ code: 'custom', path: ['expires'], message: 'Choose today or a later day.' });
      }
    });
}

export const validateMember = (today: string) => validateWith(memberSchema(today));

export const todayInput = () => toDateInput(new Date().toISOString());

/** The request: an expiry only for a guest, at the end of the chosen local day. */
export function memberRequest(values: MemberValues) {
  return { role: values.role, expires_at: values.role === 'guest' ? fromDateInput(values.expires) : null };
}
