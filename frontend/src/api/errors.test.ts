import { describe, expect, it } from 'vitest';
import { ApiError, errorMessage, toApiError } from './errors';
import { serverErrors } from '../ui/form';

const refusal = (body: unknown, status = 422) =>
  toApiError(new Response(null, { status }), body);

describe('API errors', () => {
  it("keep the server's refused fields", () => {
    const error = refusal({
      error: {
        code: 'invalid_request',
        message: 'email: must be an email address; members.0.home_size_gib: too big',
        fields: [
          { field: 'email', message: 'must be an email address' },
          { field: 'members.0.home_size_gib', message: 'too big' },
        ],
      },
    });
    expect(error).toBeInstanceOf(ApiError);
    expect(error.fields).toHaveLength(2);
    // Without a form field to show them on, each is named in words.
    expect(errorMessage(error)).toBe('Email: must be an email address; Home size gib: too big');
  });

  it('put the fields a form has on those fields, and leave the rest for its alert', () => {
    const error = refusal({
      error: {
        code: 'invalid_request',
        message: '…',
        fields: [
          { field: 'cpu_millicores', message: 'Input should be less than or equal to 256000' },
          { field: 'tier_id', message: 'not a UUID' },
        ],
      },
    });
    const { onFields, rest } = serverErrors(error, { cpu_millicores: 'cpuCores' }, ['cpuCores']);
    expect(onFields).toEqual({ cpuCores: 'Input should be less than or equal to 256000' });
    expect(rest).toBe('tier_id: not a UUID');
  });

  it('without fields, leave the whole message for the alert', () => {
    const error = refusal({ error: { code: 'insufficient_credits', message: 'You have 1 credit.' } }, 409);
    expect(error.fields).toEqual([]);
    expect(serverErrors(error, {}, ['name'])).toEqual({ onFields: {}, rest: 'You have 1 credit.' });
    expect(errorMessage(refusal('not json', 502))).toBe('The server answered with status 502.');
  });
});
