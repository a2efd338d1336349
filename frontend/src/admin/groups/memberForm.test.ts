import { describe, expect, it } from 'vitest';
import { memberRequest, validateMember, type MemberValues } from './memberForm';

const today = '2026-12-03';
const good: MemberValues = { userId: 'u-1', role: 'guest', expires: '2026-12-31' };
const errors = (change: Partial<MemberValues>) => validateMember(today)({ ...good, ...change });

describe('the member schema', () => {
  it('takes a member, and a guest with no end date or one from today on', () => {
    expect(errors({ role: 'member', expires: '' })).toEqual({});
    expect(errors({ expires: '' })).toEqual({});
    expect(errors({ expires: today })).toEqual({});
    expect(errors({})).toEqual({});
  });

  it('asks who', () => {
    expect(errors({ userId: null })).toEqual({ userId: 'Choose a user.' });
  });

  it("refuses a guest's end date in the past or that is no date", () => {
    expect(errors({ expires: '2026-12-02' })).toEqual({ expires: 'Choose today or a later day.' });
    for (const expires of ['31/12/2026', '2026-13-45', '+275760-09-14', '9999999-01-01']) {
      expect(errors({ expires })).toEqual({ expires: 'Choose a date from the calendar.' });
    }
  });

  it("ignores a member's leftover end date, and sends a guest's as the end of that day", () => {
    expect(errors({ role: 'member', expires: '1999-01-01' })).toEqual({});
    expect(memberRequest({ ...good, role: 'member' })).toEqual({ role: 'member', expires_at: null });
    const sent = memberRequest(good).expires_at!;
    expect(new Date(sent).getTime()).toBe(new Date('2026-12-31T23:59:59').getTime());
  });
});
