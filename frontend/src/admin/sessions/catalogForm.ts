/** What the catalog's image forms hold, and the schema that says what they may hold. */
import { z } from 'zod';
import type { ImageOut, SessionType } from '../../api/hooks/sessions';
import { freeTextUpTo, textUpTo, validateWith } from '../../ui/form';

/** The server's bounds (sessions/schemas.py: ImageCreate, ImageUpdate). */
export const LIMITS = { name: 80, reference: 512, description: 2000 } as const;

// What the server accepts as an image reference (registry/name:tag or @digest).
const REFERENCE = /^[a-z0-9]([a-z0-9._/:@-]*[A-Za-z0-9_])?$/;

export type ImageValues = {
  sessionType: SessionType;
  name: string;
  reference: string;
  description: string;
  enabled: boolean;
};

export const imageSchema = z.object({
  name: textUpTo(LIMITS.name, { required: true, label: 'The name' }),
  reference: z
    .string()
    .trim()
    .refine((value) => value.length > 0, { error: 'Enter the image reference.' })
    .refine((value) => value.length <= LIMITS.reference, { error: `Use at most ${LIMITS.reference} characters.` })
    .refine((value) => !value || value.length > LIMITS.reference || REFERENCE.test(value), {
      error: 'Enter an image reference such as registry.example.org/team/jupyter:4.1.',
    }),
  description: freeTextUpTo(LIMITS.description),
});
export const validateImage = validateWith(imageSchema);

export const IMAGE_FIELDS: Record<string, keyof ImageValues> = {
  session_type: 'sessionType',
  name: 'name',
  reference: 'reference',
  description: 'description',
  enabled: 'enabled',
};

export const NEW_IMAGE: ImageValues = {
  sessionType: 'jupyterlab',
  name: '',
  reference: '',
  description: '',
  enabled: true,
};

export const valuesOf = (image: ImageOut): ImageValues => ({
  sessionType: image.session_type,
  name: image.name,
  reference: image.reference,
  description: image.description,
  enabled: image.enabled,
});

/** The fields both requests send, trimmed as the server would. */
export function imageFields(values: ImageValues) {
  return { name: values.name.trim(), reference: values.reference.trim(), description: values.description.trim() };
}
