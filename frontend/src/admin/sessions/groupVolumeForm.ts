/** What the new shared volume form holds, and the schema that says what it may hold. */
import { z } from 'zod';
import type { SharedVolumeCreate } from '../../api/hooks/sessions';
import { asNumber, numberIn, validateWith } from '../../ui/form';

export type AccessMode = NonNullable<SharedVolumeCreate['access_mode']>;

/** The server's bounds (sessions/schemas.py: SharedVolumeCreate). */
export const LIMITS = {
  name: 40,
  sizeGiB: { min: 1, max: 16384, integer: true, unit: 'GiB' },
} as const;

// Kubernetes names: lower-case letters, digits and inner dashes.
const VOLUME_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export type VolumeValues = { name: string; sizeGiB: number | string; access: AccessMode };

export const NEW_VOLUME: VolumeValues = { name: '', sizeGiB: 50, access: 'ReadWriteMany' };

export const volumeSchema = z.object({
  name: z
    .string()
    .trim()
    .refine((value) => value.length > 0, { error: 'Enter a name.' })
    .refine((value) => value.length <= LIMITS.name, { error: `Use at most ${LIMITS.name} characters.` })
    .refine((value) => !value || value.length > LIMITS.name || VOLUME_NAME.test(value), {
      error: 'Use lower-case letters, digits and dashes, starting and ending with a letter or digit.',
    }),
  sizeGiB: numberIn(LIMITS.sizeGiB),
});
export const validateVolume = validateWith(volumeSchema);

export const VOLUME_FIELDS: Record<string, keyof VolumeValues> = {
  name: 'name',
  size_gib: 'sizeGiB',
  access_mode: 'access',
};

export function volumeRequest(values: VolumeValues): SharedVolumeCreate {
  return { name: values.name.trim(), size_gib: asNumber(values.sizeGiB), access_mode: values.access };
}
