/** What a credit action's form holds, and the schema that says what it may hold. */
import { z } from 'zod';
import { toMicros } from '../../ui/amount';
import { amountText, freeTextUpTo } from '../../ui/form';

/** The server's bound on a memo (credits/schemas.py: Memo), counted once trimmed. */
export const MEMO_MAX = 500;

export type CreditValues = { amount: string; memo: string };

export interface CreditLimits {
  /** Zero is allowed where it means "none" (a monthly grant). */
  allowZero?: boolean;
  /** The most that can move (what the source has available), and what to say above it. */
  atMost?: { amount: string; message: string };
}

/** The schema for one action: its amount (parsed to the text sent) and its memo (trimmed). */
export function creditSchema({ allowZero = false, atMost }: CreditLimits) {
  return z.object({
    amount: amountText({ allowZero }).refine((value) => !atMost || toMicros(value) <= toMicros(atMost.amount), {
      error: `More than can move: ${atMost?.message ?? ''}`,
    }),
    memo: z.string().trim().pipe(freeTextUpTo(MEMO_MAX)),
  });
}

/** The request's amount and memo (null when none was written); the form has validated them. */
export function creditRequest(values: CreditValues, limits: CreditLimits, withMemo: boolean) {
  const parsed = creditSchema(limits).parse(values);
  return { amount: parsed.amount, memo: withMemo ? parsed.memo || null : null };
}
