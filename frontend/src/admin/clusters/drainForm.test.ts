import dayjs from 'dayjs';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/errors';
import { serverErrors, validateWith } from '../../ui/form';
import {
  DRAIN_FIELDS,
  drainRequest,
  drainSchema,
  newDrain,
  onDrainField,
  PICKER_FORMAT,
  REASON_MAX,
  type DrainValues,
} from './drainForm';

const NOW = dayjs('2026-11-30T10:00:00').valueOf();
const at = (minutes: number) => dayjs(NOW).add(minutes, 'minute').format(PICKER_FORMAT);
const good: DrainValues = { ...newDrain(NOW), reason: 'Firmware update' };
const errors = (change: Partial<DrainValues>) => validateWith(drainSchema(NOW))({ ...good, ...change });

describe('the drain schema', () => {
  it('starts with the whole cluster, half an hour from now, and takes it with a reason', () => {
    expect(newDrain(NOW)).toEqual({ scope: 'cluster', node: null, cardId: null, deadline: at(30), reason: '' });
    expect(errors({})).toEqual({});
    expect(errors({ scope: 'node', node: 'node-a' })).toEqual({});
    expect(errors({ scope: 'card', cardId: 'card-1' })).toEqual({});
  });

  it('asks for the node or the card the scope names', () => {
    expect(errors({ scope: 'node' })).toEqual({ node: 'Choose a node.' });
    expect(errors({ scope: 'card', node: 'node-a' })).toEqual({ cardId: 'Choose a card.' });
  });

  it('asks for a reason the server takes', () => {
    expect(errors({ reason: '  ' })).toEqual({ reason: "Say why; the sessions' owners will read it." });
    expect(errors({ reason: 'x'.repeat(REASON_MAX + 1) })).toEqual({ reason: 'Use at most 500 characters.' });
    expect(errors({ reason: 'x'.repeat(REASON_MAX) })).toEqual({});
    expect(errors({ reason: 'line\u0007bell' })).toEqual({ reason: 'Use no control or invisible characters.' });
  });

  it('takes a deadline from the minute being picked up to 30 days ahead', () => {
    expect(errors({ deadline: at(0) })).toEqual({});
    expect(errors({ deadline: dayjs(NOW).subtract(30, 'second').format(PICKER_FORMAT) })).toEqual({});
    expect(errors({ deadline: at(-5) })).toEqual({ deadline: 'Choose now or a later time.' });
    expect(errors({ deadline: at(30 * 24 * 60) })).toEqual({});
    expect(errors({ deadline: at(30 * 24 * 60 + 1) })).toEqual({ deadline: 'Choose a time at most 30 days ahead.' });
    expect(errors({ deadline: '' })).toEqual({ deadline: 'Choose when its sessions are paused.' });
    expect(errors({ deadline: 'tomorrow' })).toEqual({ deadline: 'Choose a date and time from the calendar.' });
  });

  it('names every problem at once', () => {
    expect(errors({ scope: 'card', reason: '', deadline: '' })).toEqual({
      cardId: 'Choose a card.',
      deadline: 'Choose when its sessions are paused.',
      reason: "Say why; the sessions' owners will read it.",
    });
  });

  it('sends only what the scope names, the deadline as a UTC instant and the reason trimmed', () => {
    const values: DrainValues = { scope: 'node', node: 'node-a', cardId: 'card-1', deadline: at(30), reason: ' Firmware ' };
    expect(drainRequest(values, 'c1')).toEqual({
      scope: 'node',
      cluster_id: 'c1',
      node: 'node-a',
      card_id: null,
      deadline: dayjs(NOW).add(30, 'minute').toISOString(),
      reason: 'Firmware',
    });
    expect(drainRequest({ ...values, scope: 'card' }, 'c1')).toMatchObject({ node: null, card_id: 'card-1' });
    expect(drainRequest({ ...values, scope: 'cluster' }, 'c1')).toMatchObject({ node: null, card_id: null });
    expect(drainRequest(values, 'c1').deadline).toMatch(/Z$/);
  });
});

describe("the server's refusals of a drain", () => {
  const fields = Object.keys(good);
  const shown = (error: unknown) => serverErrors(onDrainField(error), DRAIN_FIELDS, fields);

  it('land on the field they concern, by field or by code', () => {
    expect(shown(new ApiError(422, 'invalid_request', 'Invalid.', null, [{ field: 'card_id', message: 'Not a UUID.' }]))).toEqual({
      onFields: { cardId: 'Not a UUID.' },
      rest: null,
    });
    expect(shown(new ApiError(422, 'invalid_deadline', "A drain's deadline is at most 30 days ahead."))).toEqual({
      onFields: { deadline: "A drain's deadline is at most 30 days ahead." },
      rest: null,
    });
    expect(shown(new ApiError(404, 'node_not_found', 'No card of that cluster is on that node.'))).toEqual({
      onFields: { node: 'No card of that cluster is on that node.' },
      rest: null,
    });
    expect(shown(new ApiError(404, 'card_not_found', 'No such card in that cluster.')).onFields).toEqual({
      cardId: 'No such card in that cluster.',
    });
  });

  it('leave the rest to the form', () => {
    expect(shown(new ApiError(404, 'cluster_not_found', 'No such cluster.'))).toEqual({ onFields: {}, rest: 'No such cluster.' });
  });
});
