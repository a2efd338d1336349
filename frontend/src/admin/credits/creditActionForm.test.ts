import { describe, expect, it } from 'vitest';
import { validateWith } from '../../ui/form';
import { creditRequest, creditSchema, type CreditLimits, type CreditValues } from './creditActionForm';

const errors = (values: Partial<CreditValues>, limits: CreditLimits = {}) =>
  validateWith(creditSchema(limits))({ amount: '1', memo: '', ...values });

describe('the credit action schema', () => {
  it('takes an amount as typed and sends it in canonical form', () => {
    expect(errors({ amount: '12.5' })).toEqual({});
    expect(creditRequest({ amount: ' 012.500 ', memo: '  Beam time ' }, {}, true)).toEqual({
      amount: '12.5',
      memo: 'Beam time',
    });
    expect(creditRequest({ amount: '3', memo: '   ' }, {}, true)).toEqual({ amount: '3', memo: null });
    expect(creditRequest({ amount: '3', memo: 'kept out' }, {}, false)).toEqual({ amount: '3', memo: null });
  });

  it('refuses what is not a positive amount with at most six decimals', () => {
    expect(errors({ amount: '' })).toEqual({ amount: 'Enter an amount.' });
    expect(errors({ amount: '   ' })).toEqual({ amount: 'Enter an amount.' });
    expect(errors({ amount: '0' })).toEqual({ amount: 'Enter an amount greater than zero.' });
    expect(errors({ amount: '-5' })).toEqual({ amount: 'Enter a positive amount.' });
    expect(errors({ amount: '1.1234567' })).toEqual({ amount: 'Use at most 6 decimals.' });
    for (const amount of ['1e3', '1,5', '0x10', 'Infinity', '1\u0000', '٣']) {
      expect(errors({ amount }).amount).toMatch(/using a dot for decimals/);
    }
  });

  it('refuses more than the server takes, and more than the source has', () => {
    expect(errors({ amount: '1000000000000.000001' })).toEqual({ amount: 'Enter at most 1,000,000,000,000 credits.' });
    expect(errors({ amount: '9'.repeat(40) })).toEqual({ amount: 'Enter at most 1,000,000,000,000 credits.' });
    const atMost = { amount: '10', message: 'Optics has 10 credits available.' };
    expect(errors({ amount: '10' }, { atMost })).toEqual({});
    expect(errors({ amount: '10.000001' }, { atMost })).toEqual({
      amount: 'More than can move: Optics has 10 credits available.',
    });
  });

  it('takes zero only where it means none', () => {
    expect(errors({ amount: '0' }, { allowZero: true })).toEqual({});
  });

  it('refuses a memo over the limit in characters, or with NUL, and never cuts it', () => {
    expect(errors({ memo: 'm'.repeat(500) })).toEqual({});
    expect(errors({ memo: `  ${'m'.repeat(500)}  ` })).toEqual({});
    expect(errors({ memo: '🚀'.repeat(500) })).toEqual({});
    expect(errors({ memo: 'm'.repeat(501) })).toEqual({ memo: 'Use at most 500 characters.' });
    expect(errors({ memo: 'a\u0000b' })).toEqual({ memo: 'Remove the NUL character.' });
  });
});
