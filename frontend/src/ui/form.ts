/**
 * The pieces every form shares: one zod schema per form validates what was typed (run by
 * `@mantine/form` through `schemaResolver`), number fields refuse what is out of range instead
 * of clamping it, and the server's refusals land on the field they concern.
 */
import { schemaResolver, type FormErrors } from '@mantine/form';
import { z } from 'zod';
import { ApiError, errorMessage } from '../api/errors';
import { parseAmount, toMicros } from './amount';

// zod compiles object schemas with `new Function` unless told not to; the console's
// Content-Security-Policy forbids eval, and even zod's probe for it would be reported.
z.config({ jitless: true });

const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });

interface Range {
  min: number;
  max: number;
  /** Only whole numbers, as for sizes in GiB. */
  integer?: boolean;
  /** Only whole multiples of 1/per, as the server counts them (per 1000 for millicores). */
  steps?: { per: number; message: string };
  /** Said after the numbers in the message: "cores", "GiB". */
  unit?: string;
}

/** The message a number field shows when its value is out of range. */
export function rangeMessage({ min, max, integer, unit }: Range): string {
  const what = integer ? 'a whole number' : 'a number';
  return `Enter ${what} from ${plain.format(min)} to ${plain.format(max)}${unit ? ` ${unit}` : ''}.`;
}

/**
 * A NumberInput's value (a number, or the text typed: '' when empty, '-' half-way) checked
 * against its range. The input must not clamp (`clampBehavior="none"`): what was typed is
 * what is refused.
 */
// A number as a person types it: digits, one optional decimal point, an optional minus.
// Number() alone would also take "0x10", "1e2" and spaces.
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)$/;

function numeric(value: unknown): number {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && DECIMAL.test(value) ? Number(value) : NaN;
}

/** Whether `n` is a whole number of 1/steps (within floating point's reach). */
function inSteps(n: number, steps: number): boolean {
  const scaled = n * steps;
  return Math.abs(scaled - Math.round(scaled)) < 1e-6;
}

export function numberIn(range: Range) {
  const message = rangeMessage(range);
  return z
    .union([z.number(), z.string()])
    .pipe(
      z.custom<number>(
        (value) => {
          const n = numeric(value);
          return Number.isFinite(n) && n >= range.min && n <= range.max && (!range.integer || Number.isInteger(n));
        },
        { error: message },
      ),
    )
    .refine((value) => !range.steps || inSteps(numeric(value), range.steps.per), {
      error: range.steps?.message,
    });
}

/** The range message when `value` (as a NumberInput gives it) is not in `range`; null when it is. */
export function outOfRange(value: number | string, range: Range): string | null {
  return numberIn(range).safeParse(value).success ? null : rangeMessage(range);
}

// Line breaks, terminal escapes, right-to-left overrides, zero-width marks: what the server
// refuses in a name (kit/schemas.py, Printable).
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/** A name of at most `max` characters once trimmed, with nothing invisible in it. */
export function textUpTo(max: number, { required = false, label = 'This field' } = {}) {
  // Counted in characters as the server counts them (code points), not UTF-16 units.
  const base = z
    .string()
    .trim()
    .refine((value) => [...value].length <= max, { error: `Use at most ${max} characters.` })
    .refine((value) => !INVISIBLE.test(value), { error: 'Use no control or invisible characters.' });
  return required ? base.refine((value) => value.length > 0, { error: `${label} is required.` }) : base;
}

/**
 * Free text (a description, a memo, a kubeconfig): at most `max` characters, line breaks
 * allowed, and no NUL, which the server refuses in every field (PostgreSQL text cannot hold it).
 */
export function freeTextUpTo(max: number) {
  return z
    .string()
    .refine((value) => [...value].length <= max, { error: `Use at most ${max.toLocaleString('en')} characters.` })
    .refine((value) => !value.includes('\u0000'), { error: 'Remove the NUL character.' });
}

/** The largest amount the server takes (credits/amounts.py, MAX_AMOUNT): a trillion credits. */
export const MAX_CREDITS = '1000000000000';

/**
 * A credit amount as typed (a price, a transfer): what parseAmount takes, and at most
 * MAX_CREDITS; parsed, the canonical text to send ("1.50" gives "1.5").
 */
export function amountText({ allowZero = false } = {}) {
  return z.string().transform((text, ctx) => {
    const checked = parseAmount(text, { allowZero });
    if (!checked.ok) {
      ctx.addIssue({ code: 'custom', message: checked.error });
      return z.NEVER;
    }
    if (toMicros(checked.value) > toMicros(MAX_CREDITS)) {
      ctx.addIssue({ code: 'custom', message: 'Enter at most 1,000,000,000,000 credits.' });
      return z.NEVER;
    }
    return checked.value;
  });
}

/** `validate` for `useForm`: the schema, run synchronously on each check. */
export function validateWith(schema: z.ZodType) {
  return schemaResolver(schema, { sync: true });
}

/** A number field's value as the number it holds (the form has validated it). */
export const asNumber = (value: number | string): number => (typeof value === 'number' ? value : Number(value));

/**
 * The server's refusal split in two: the fields it names, put on the form's own fields
 * (`fields` maps a request path to a form path; a path not in it is the same in both), and
 * what is left for the form's alert (null when every part found its field).
 */
export function serverErrors(
  error: unknown,
  fields: Record<string, string> = {},
  known: readonly string[] = [],
): { onFields: FormErrors; rest: string | null } {
  if (!(error instanceof ApiError) || error.fields.length === 0) {
    return { onFields: {}, rest: errorMessage(error) };
  }
  const onFields: FormErrors = {};
  const left: string[] = [];
  for (const { field, message } of error.fields) {
    const path = fields[field] ?? field;
    if (known.includes(path)) onFields[path] = message;
    else left.push(`${field}: ${message}`);
  }
  return { onFields, rest: left.length ? left.join('; ') : null };
}
