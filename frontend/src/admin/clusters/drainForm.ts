/** What the drain form holds (what to drain, until when, why), and the schema that says what it may hold. */
import dayjs from 'dayjs';
import { z } from 'zod';
import { ApiError } from '../../api/errors';
import { textUpTo, validateWith } from '../../ui/form';
import type { DrainIn, DrainScope } from './drains';

export type DrainValues = {
  scope: DrainScope;
  node: string | null;
  cardId: string | null;
  /** The picker's local wall time, `YYYY-MM-DD HH:mm:ss`; '' for none. */
  deadline: string;
  reason: string;
};

// The server's bounds (capacity/schemas.py DrainIn, preempting.start_drain): a reason of 1 to
// 500 characters; a deadline from a minute ago (the minute being picked) to 30 days ahead.
export const REASON_MAX = 500;
export const MAX_AHEAD_DAYS = 30;
const GRACE_MS = 60_000;
export const PICKER_FORMAT = 'YYYY-MM-DD HH:mm:ss';

export const SCOPE_LABELS: Record<DrainScope, string> = {
  cluster: 'Whole cluster',
  node: 'One node',
  card: 'One card',
};

/** A new drain: the whole cluster, its sessions paused half an hour from `now`. */
export function newDrain(now: number): DrainValues {
  const deadline = dayjs(now).add(30, 'minute').startOf('minute').format(PICKER_FORMAT);
  return { scope: 'cluster', node: null, cardId: null, deadline, reason: '' };
}

/** `now`: the time the form is checked at (passed in, so the schema reads no clock). */
export function drainSchema(now: number) {
  return z
    .object({
      scope: z.enum(['cluster', 'node', 'card']),
      node: z.string().nullable(),
      cardId: z.string().nullable(),
      deadline: z.string(),
      reason: textUpTo(REASON_MAX).refine((value) => value.length > 0, {
        error: "Say why; the sessions' owners will read it.",
      }),
    })
    .superRefine(({ scope, node, cardId, deadline }, ctx) => {
      if (scope === 'node' && !node) ctx.addIssue({ code: 'custom', path: ['node'], message: 'Choose a node.' });
      if (scope === 'card' && !cardId) ctx.addIssue({ code: 'custom', path: ['cardId'], message: 'Choose a card.' });
      const problem = deadlineProblem(deadline, now);
      if (problem) ctx.addIssue({ code: 'custom', path: ['deadline'], message: problem });
    });
}

function deadlineProblem(deadline: string, now: number): string | null {
  if (!deadline) return 'Choose when its sessions are paused.';
  const when = dayjs(deadline);
  if (!when.isValid()) return 'Choose a date and time from the calendar.';
  if (when.valueOf() < now - GRACE_MS) return 'Choose now or a later time.';
  if (when.isAfter(dayjs(now).add(MAX_AHEAD_DAYS, 'day'))) return `Choose a time at most ${MAX_AHEAD_DAYS} days ahead.`;
  return null;
}

/** Checked against the clock at the moment of checking: a dialog may stay open a while. */
export const validateDrain = (values: DrainValues) => validateWith(drainSchema(Date.now()))(values);

/** The server's request field paths, as the form's fields. */
export const DRAIN_FIELDS: Record<string, keyof DrainValues> = {
  scope: 'scope',
  node: 'node',
  card_id: 'cardId',
  deadline: 'deadline',
  reason: 'reason',
};

// Refusals the server gives by code rather than by field, and the request field each concerns.
const CODE_FIELDS: Record<string, string> = {
  invalid_deadline: 'deadline',
  node_not_found: 'node',
  card_not_found: 'card_id',
};

/** A refusal of the deadline, node or card, given by code, as one on that field; others as they are. */
export function onDrainField(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.fields.length > 0 || !(error.code in CODE_FIELDS)) return error;
  const field = CODE_FIELDS[error.code];
  return new ApiError(error.status, error.code, error.message, error.retryAfter, [{ field, message: error.message }]);
}

/** The request: only what the scope names, the deadline as a UTC instant, the reason trimmed. */
export function drainRequest(values: DrainValues, clusterId: string): DrainIn {
  return {
    scope: values.scope,
    cluster_id: clusterId,
    node: values.scope === 'node' ? values.node : null,
    card_id: values.scope === 'card' ? values.cardId : null,
    deadline: dayjs(values.deadline).toISOString(),
    reason: values.reason.trim(),
  };
}
