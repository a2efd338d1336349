import { describe, expect, it } from 'vitest';
import { formatAmount, formatCredits, formatRounded, formatSigned, fromMicros, parseAmount, sumAmounts, toMicros } from './amount';

describe('amount input', () => {
  it.each(['-1', 'abc', '1.1234567', '', '   ', '.', '1,5', '1e3', '+2', '1.2.3', '0', '0.000000'])('refuses %j', (input) => {
    expect(parseAmount(input).ok).toBe(false);
  });

  it('accepts a positive decimal with up to 6 decimals, in canonical form', () => {
    expect(parseAmount('12.5')).toEqual({ ok: true, value: '12.5' });
    expect(parseAmount(' 0012.500 ')).toEqual({ ok: true, value: '12.5' });
    expect(parseAmount('0.000001')).toEqual({ ok: true, value: '0.000001' });
    expect(parseAmount('1.1234560')).toEqual({ ok: true, value: '1.123456' });
    expect(parseAmount('.5')).toEqual({ ok: true, value: '0.5' });
    expect(parseAmount('1000')).toEqual({ ok: true, value: '1000' });
  });

  it('explains what is wrong', () => {
    expect(parseAmount('-1')).toEqual({ ok: false, error: 'Enter a positive amount.' });
    expect(parseAmount('1.1234567')).toEqual({ ok: false, error: 'Use at most 6 decimals.' });
    expect(parseAmount('0')).toEqual({ ok: false, error: 'Enter an amount greater than zero.' });
  });

  it('accepts zero where zero means "none"', () => {
    expect(parseAmount('0', { allowZero: true })).toEqual({ ok: true, value: '0' });
  });
});

describe('amount display', () => {
  it('adds thousands separators without touching the decimals', () => {
    expect(formatAmount('1234567.000001')).toBe('1,234,567.000001');
    expect(formatAmount('-1234.5')).toBe('-1,234.5');
    expect(formatAmount('999')).toBe('999');
    expect(formatAmount('not a number')).toBe('not a number');
  });

  it('signs movements', () => {
    expect(formatSigned('12.5')).toBe('+12.5');
    expect(formatSigned('-3.5')).toBe('-3.5');
    expect(formatSigned('0')).toBe('0');
  });

  it('names the unit', () => {
    expect(formatCredits('1')).toBe('1 credit');
    expect(formatCredits('1.000')).toBe('1 credit');
    expect(formatCredits('2500')).toBe('2,500 credits');
  });

  it('adds exactly, without floating point drift', () => {
    expect(sumAmounts(['0.1', '0.2'])).toBe('0.3');
    expect(sumAmounts(['0.004167', '-0.004167', '12345678901234.5'])).toBe('12345678901234.5');
    expect(fromMicros(toMicros('-0.5'))).toBe('-0.5');
    expect(sumAmounts([])).toBe('0');
  });
});

describe('formatRounded', () => {
  it('shows two decimals, rounding half away from zero, with separators', () => {
    expect(formatRounded('1234567.005')).toBe('1,234,567.01');
    expect(formatRounded('-1234.5')).toBe('-1,234.50');
    expect(formatRounded('0.004999')).toBe('0.00');
    expect(formatRounded('1000000000000')).toBe('1,000,000,000,000.00');
    expect(formatRounded('not a number')).toBe('not a number');
  });
});
