/** What the GPU model, tier and price forms hold, and the schemas that say what they may hold. */
import { z } from 'zod';
import type { FormErrors } from '@mantine/form';
import type { TierIn, TierKind } from '../../api/types';
import { amountText, asNumber, numberIn, textUpTo, validateWith } from '../../ui/form';

const INT_MAX = 2_147_483_647;

/** The server's bounds (capacity/schemas.py: GpuModelIn, TierIn). */
export const LIMITS = {
  modelName: 120,
  migProfile: 40,
  memoryMib: { min: 1, max: INT_MAX, integer: true, unit: 'MiB' },
  splitCount: { min: 1, max: 1024, integer: true },
  denominator: { min: 2, max: 1024, integer: true },
} as const;

/** The schema's value, or null where the field was left empty (the server's default applies). */
function emptyOr<T extends z.ZodType>(schema: T) {
  return z.union([z.number(), z.string()]).transform((value, ctx): z.output<T> | null => {
    if (typeof value === 'string' && !value.trim()) return null;
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
    return z.NEVER;
  });
}

const price = amountText({ allowZero: true });

export type NewModelValues = {
  name: string;
  price: string;
  memory: number | string;
  split: number | string;
};

export const newModelSchema = z.object({
  name: textUpTo(LIMITS.modelName, { required: true, label: 'The model name' }),
  price,
  memory: emptyOr(numberIn(LIMITS.memoryMib)),
  split: emptyOr(numberIn(LIMITS.splitCount)),
});
export const validateNewModel = validateWith(newModelSchema);

export const MODEL_FIELDS: Record<string, keyof NewModelValues> = {
  name: 'name',
  exclusive_price: 'price',
  memory_mib: 'memory',
  split_count: 'split',
};

/** The request for a new model: what was typed, trimmed and parsed; empty numbers left to the server. */
export function modelRequest(values: NewModelValues) {
  const parsed = newModelSchema.parse(values);
  return {
    name: parsed.name,
    exclusive_price: parsed.price,
    memory_mib: parsed.memory === null ? null : asNumber(parsed.memory),
    split_count: parsed.split === null ? null : asNumber(parsed.split),
  };
}

export type PriceValues = {
  price: string;
};

export const priceSchema = z.object({ price });
export const validatePrice = validateWith(priceSchema);
export const PRICE_FIELDS: Record<string, keyof PriceValues> = { exclusive_price: 'price', price_per_hour: 'price' };

export type NewTierValues = {
  kind: TierKind;
  denominator: number | string;
  profile: string;
  /** Empty: the default, the exclusive price times the tier's share. */
  price: string;
};

const tierBase = validateWith(z.object({ price: emptyOr(price) }));
const fraction = validateWith(z.object({ denominator: numberIn(LIMITS.denominator) }));
const mig = validateWith(
  z.object({ profile: textUpTo(LIMITS.migProfile, { required: true, label: 'The MIG profile' }) }),
);

/** `validate` for the tier form: the denominator only for a fraction, the profile only for MIG. */
export function validateNewTier(values: NewTierValues): FormErrors {
  return {
    ...tierBase(values),
    ...(values.kind === 'fraction' ? fraction(values) : {}),
    ...(values.kind === 'mig' ? mig(values) : {}),
  };
}

export const TIER_FIELDS: Record<string, keyof NewTierValues> = {
  kind: 'kind',
  denominator: 'denominator',
  mig_profile: 'profile',
  price_per_hour: 'price',
};

/** The request for a new tier: only the fields its kind takes. */
export function tierRequest(values: NewTierValues): TierIn {
  const body: TierIn = { kind: values.kind };
  if (values.kind === 'fraction') body.denominator = asNumber(values.denominator);
  if (values.kind === 'mig') body.mig_profile = values.profile.trim();
  const chosen = emptyOr(price).parse(values.price);
  if (chosen !== null) body.price_per_hour = chosen;
  return body;
}
