/** What the policy editor holds, and the schema that says what a policy document may hold. */
import { z } from 'zod';
import { asNumber, numberIn, validateWith } from '../../ui/form';
import { POLICY_KEYS, type PolicyDraft, type PolicyKey } from './policyKeys';

/** The server's bounds on a list of names (capacity/policy.py: MAX_NAMES, MAX_NAME_LENGTH). */
export const MAX_NAMES = 200;
export const MAX_NAME_LENGTH = 120;

const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/** One message for the whole list: the tags input shows its error once, not per tag. */
const names = z.array(z.string()).superRefine((items, ctx) => {
  const say = (message: string) => ctx.addIssue({ code: 'custom', message });
  if (items.length > MAX_NAMES) return say(`Name at most ${MAX_NAMES}; these are ${items.length}.`);
  if (items.some((item) => !item.trim())) return say('Remove the empty name.');
  const long = items.find((item) => [...item.trim()].length > MAX_NAME_LENGTH);
  if (long !== undefined) return say(`Use at most ${MAX_NAME_LENGTH} characters in a name.`);
  if (items.some((item) => INVISIBLE.test(item))) return say('Use no control or invisible characters in a name.');
});

/** One of the key's choices, exactly (the server neither trims nor folds case). */
function choice(spec: PolicyKey) {
  const choices = spec.choices ?? [];
  return z.enum(choices, { error: `Choose one of ${choices.join(', ')}.` });
}

function valueSchema(spec: PolicyKey) {
  if (spec.kind === 'names') return names;
  if (spec.kind === 'bool') return z.boolean();
  if (spec.kind === 'choice') return choice(spec);
  return numberIn({ min: spec.min, max: spec.max, integer: spec.kind === 'int', unit: spec.unit });
}

/** Every key optional: a key left out (undefined) is not set at this scope. */
export const policySchema = z.object(Object.fromEntries(POLICY_KEYS.map((spec) => [spec.key, valueSchema(spec).optional()])));
export const validatePolicy = validateWith(policySchema);

/** The document to send: the keys set here, names trimmed, numbers as numbers, choices as text. */
export function policyRequest(draft: PolicyDraft): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const { key, kind } of POLICY_KEYS) {
    const value = draft[key];
    if (value === undefined) continue;
    if (kind === 'names') values[key] = [...new Set((value as string[]).map((item) => item.trim()))];
    else if (kind === 'bool' || kind === 'choice') values[key] = value;
    else values[key] = asNumber(value as number | string);
  }
  return values;
}
