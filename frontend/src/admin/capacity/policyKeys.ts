import type { PolicyScope } from '../../api/types';

export const SCOPE_LABELS: Record<PolicyScope, string> = {
  global: 'Global',
  organization: 'Organization',
  group: 'Group',
  user: 'User',
};

/** The keys a policy document may set (the server's `capacity/policy.py` KEYS), in its order. */
export type PolicyKeyKind = 'names' | 'int' | 'float' | 'bool' | 'choice';

export interface PolicyKey {
  key: string;
  label: string;
  kind: PolicyKeyKind;
  min: number;
  max: number;
  unit?: string;
  /** Only a super admin sets it (the server's `RESERVED_KEYS`): it decides between tenants. */
  reserved?: boolean;
  /** The values a 'choice' key may take, exactly as the server spells them. */
  choices?: string[];
  /** The only scopes that may set it (the server's `ORG_KEYS`: an organization's as a whole). */
  scopes?: PolicyScope[];
}

const YEAR_MINUTES = 366 * 24 * 60;
const WEEK_MINUTES = 7 * 24 * 60;

export const POLICY_KEYS: PolicyKey[] = [
  { key: 'allowed_models', label: 'Allowed GPU models', kind: 'names', min: 0, max: 0 },
  { key: 'allowed_tiers', label: 'Allowed tiers', kind: 'names', min: 0, max: 0 },
  { key: 'max_gpu_sessions', label: 'GPU sessions at once', kind: 'int', min: 0, max: 10_000 },
  { key: 'max_vram_mib', label: 'VRAM in use', kind: 'int', min: 0, max: 2 ** 40, unit: 'MiB' },
  { key: 'cpu_cores_per_session', label: 'CPU cores per session', kind: 'float', min: 0, max: 4096 },
  { key: 'memory_mib_per_session', label: 'Memory per session', kind: 'int', min: 0, max: 2 ** 40, unit: 'MiB' },
  { key: 'cpu_cores_total', label: 'CPU cores in all sessions', kind: 'float', min: 0, max: 1_000_000 },
  { key: 'memory_mib_total', label: 'Memory in all sessions', kind: 'int', min: 0, max: 2 ** 50, unit: 'MiB' },
  { key: 'storage_gb', label: 'Storage', kind: 'int', min: 0, max: 1_000_000, unit: 'GB' },
  { key: 'idle_timeout_minutes', label: 'Idle timeout', kind: 'int', min: 1, max: YEAR_MINUTES, unit: 'minutes' },
  {
    key: 'keep_running_limit_minutes',
    label: 'Keep-running limit',
    kind: 'int',
    min: 0,
    max: YEAR_MINUTES,
    unit: 'minutes',
  },
  { key: 'max_session_minutes', label: 'Longest session', kind: 'int', min: 1, max: YEAR_MINUTES, unit: 'minutes' },
  { key: 'queueing_allowed', label: 'Queueing allowed', kind: 'bool', min: 0, max: 0 },
  {
    key: 'org_weight',
    label: 'Organization weight',
    kind: 'float',
    min: 0.001,
    max: 1000,
    reserved: true,
    scopes: ['global', 'organization'],
  },
  { key: 'queue_weight', label: 'Queue weight', kind: 'float', min: 0.001, max: 1000 },
  { key: 'priority', label: 'Priority', kind: 'choice', min: 0, max: 0, choices: ['low', 'normal', 'high'], reserved: true },
  { key: 'preemptible', label: 'Preemptible', kind: 'bool', min: 0, max: 0, reserved: true },
  {
    key: 'min_runtime_minutes',
    label: 'Minimum runtime before preemption',
    kind: 'int',
    min: 0,
    max: YEAR_MINUTES,
    unit: 'minutes',
    reserved: true,
  },
  {
    key: 'max_wait_minutes',
    label: 'Longest wait before claiming a card',
    kind: 'int',
    min: 1,
    max: YEAR_MINUTES,
    unit: 'minutes',
    reserved: true,
  },
  {
    key: 'preemption_notice_minutes',
    label: 'Preemption notice',
    kind: 'int',
    min: 0,
    max: WEEK_MINUTES,
    unit: 'minutes',
    reserved: true,
  },
  {
    key: 'max_booked_card_hours_week',
    label: "A group's bookable card-hours a week",
    kind: 'float',
    min: 0,
    max: 10_000_000,
    unit: 'card-hours',
    reserved: true,
  },
  {
    key: 'max_org_booked_card_hours_week',
    label: "An organization's bookable card-hours a week",
    kind: 'float',
    min: 0,
    max: 10_000_000,
    unit: 'card-hours',
    reserved: true,
    scopes: ['global', 'organization'],
  },
  {
    key: 'max_booking_days_ahead',
    label: 'Booking horizon',
    kind: 'int',
    min: 0,
    max: 3660,
    unit: 'days',
    reserved: true,
  },
  {
    key: 'isolation',
    label: 'Isolation level',
    kind: 'choice',
    min: 0,
    max: 0,
    reserved: true,
    choices: [
      'shared',
      'user-namespaced',
      'sandboxed',
      'dedicated',
      'dedicated+user-namespaced',
      'dedicated+sandboxed',
    ],
  },
  {
    key: 'egress',
    label: 'Outbound network',
    kind: 'choice',
    min: 0,
    max: 0,
    reserved: true,
    choices: ['open', 'listed', 'none'],
  },
  { key: 'egress_cidrs', label: 'Reachable address ranges', kind: 'names', min: 0, max: 0, reserved: true },
];

export const POLICY_KEY_LABELS = Object.fromEntries(POLICY_KEYS.map((k) => [k.key, k.label]));

/** A number as typed stays text ('' when empty) until the schema has checked it; a choice
 * is its text ('' until one is chosen). */
export type PolicyDraftValue = string[] | number | string | boolean;

/** What a form row holds for a key the scope sets; `undefined`: the scope leaves it unset. */
export type PolicyDraft = Record<string, PolicyDraftValue | undefined>;

/** Every key, set or not (undefined), so that a form set from it forgets what it held before. */
export function draftOf(values: Record<string, unknown>): PolicyDraft {
  const draft: PolicyDraft = Object.fromEntries(POLICY_KEYS.map(({ key }) => [key, undefined]));
  for (const { key, kind } of POLICY_KEYS) {
    const value = values[key];
    if (value === undefined || value === null) continue;
    if (kind === 'names') draft[key] = Array.isArray(value) ? value.map(String) : [];
    else if (kind === 'bool') draft[key] = Boolean(value);
    else if (kind === 'choice') draft[key] = String(value);
    else draft[key] = typeof value === 'number' ? value : Number(value);
  }
  return draft;
}

/** A policy value as text: lists joined, booleans as yes/no, units added. */
export function formatPolicyValue(key: string, value: unknown): string {
  if (value === null || value === undefined) return 'not set';
  const spec = POLICY_KEYS.find((k) => k.key === key);
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return spec?.unit ? `${String(value)} ${spec.unit}` : String(value);
}
