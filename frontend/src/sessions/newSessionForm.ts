/** What New session's form holds, and the one schema that says what it may hold. */
import { z } from 'zod';
import type { FormErrors } from '@mantine/form';
import { numberIn, textUpTo, validateWith } from '../ui/form';
import type { SessionType } from '../api/hooks/sessions';
import type { UsableTierOut } from '../api/types';
import { toMicros } from '../ui/amount';

export const CPU_ONLY = 'cpu';
export const NEW_HOME = 'new';
export const MAX_SHARED_VOLUMES = 8;

/** The server's bounds on a session (SessionCreate), in the units the form asks in. */
export const LIMITS = {
  name: 80,
  cpuCores: {
    min: 0.1,
    max: 256,
    unit: 'cores',
    steps: { per: 1000, message: 'Use at most three decimals: cores are counted in thousandths.' },
  },
  memoryGiB: {
    min: 0.125,
    max: 4096,
    unit: 'GiB',
    steps: { per: 1024, message: 'Use whole MiB: a multiple of 1/1024 GiB, such as 0.5 or 1.25.' },
  },
  homeSizeGiB: { min: 1, max: 16384, integer: true, unit: 'GiB' },
} as const;

export interface NewSessionValues {
  name: string;
  sessionType: SessionType;
  /** The image chosen; null (or one not of the type) means the type's first image. */
  image: string | null;
  group: string | null;
  /** A tier id, or CPU_ONLY; null until the person chooses, while `defaultTier` applies. */
  gpu: string | null;
  cpuCores: number | string;
  memoryGiB: number | string;
  /** A free home volume's id, or NEW_HOME. */
  home: string;
  homeSizeGiB: number | string;
  shared: string[];
}

export const newSessionSchema = z.object({
  name: textUpTo(LIMITS.name),
  group: z.string({ error: 'Choose the group the session runs for.' }),
  cpuCores: numberIn(LIMITS.cpuCores),
  memoryGiB: numberIn(LIMITS.memoryGiB),
  home: z.string(),
  homeSizeGiB: z.union([z.number(), z.string()]),
  shared: z.array(z.string()).max(MAX_SHARED_VOLUMES, { error: `Choose at most ${MAX_SHARED_VOLUMES}.` }),
});

const fieldErrors = validateWith(newSessionSchema);
const homeSize = validateWith(z.object({ homeSizeGiB: numberIn(LIMITS.homeSizeGiB) }));

/**
 * `validate` for the form: the schema, and the size of the home volume only when a new one is
 * made (checked apart, so that it is said at once with the other fields' errors).
 */
export function validateNewSession(values: NewSessionValues): FormErrors {
  return { ...fieldErrors(values), ...(values.home === NEW_HOME ? homeSize(values) : {}) };
}

/** The request fields the server names in a refusal, as the form's fields. */
export const SERVER_FIELDS: Record<string, keyof NewSessionValues> = {
  name: 'name',
  group_id: 'group',
  image_id: 'image',
  tier_id: 'gpu',
  cpu_millicores: 'cpuCores',
  memory_mib: 'memoryGiB',
  home_volume_id: 'home',
  home_size_gib: 'homeSizeGiB',
  shared_volume_ids: 'shared',
};

type TierChoice = Pick<UsableTierOut, 'id' | 'price_per_hour' | 'free_slots' | 'estimated_wait_seconds'>;

/**
 * The GPU a new session is offered first: the cheapest tier that can start now; when none can,
 * the cheapest that can queue (shortest wait on a tie); when no card offers any, the cheapest
 * allowed; CPU_ONLY when no tier is allowed. Other ties go to the tier listed first.
 */
export function defaultTier(tiers: readonly TierChoice[]): string {
  const cheapest = (among: readonly TierChoice[]) =>
    among.reduce<TierChoice | null>((best, tier) => {
      if (best === null) return tier;
      const [price, bestPrice] = [toMicros(tier.price_per_hour), toMicros(best.price_per_hour)];
      if (price !== bestPrice) return price < bestPrice ? tier : best;
      return (tier.estimated_wait_seconds ?? 0) < (best.estimated_wait_seconds ?? 0) ? tier : best;
    }, null);
  const found =
    cheapest(tiers.filter((tier) => tier.free_slots > 0)) ??
    cheapest(tiers.filter((tier) => tier.estimated_wait_seconds !== null)) ??
    cheapest(tiers);
  return found?.id ?? CPU_ONLY;
}
