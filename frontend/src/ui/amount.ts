// Credit amounts travel as decimal strings with up to 6 decimals. They are
// shown as given and sent as typed; the only arithmetic (totals and bar
// heights) runs on whole millionths in BigInt, never on floats.

export const AMOUNT_DECIMALS = 6;
const SCALE = 10n ** BigInt(AMOUNT_DECIMALS);

export type AmountCheck = { ok: true; value: string } | { ok: false; error: string };

/**
 * Validates what someone typed as an amount: a plain positive decimal with at
 * most 6 decimals ("12.5", "0.25", "1000"). Returns it in canonical form
 * (no leading or trailing zeros) so the confirmation shows what is sent.
 */
export function parseAmount(input: string, { allowZero = false } = {}): AmountCheck {
  const text = input.trim();
  if (!text) return { ok: false, error: 'Enter an amount.' };
  if (text.startsWith('-')) return { ok: false, error: 'Enter a positive amount.' };
  const match = /^(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match || !(match[1] || match[2])) {
    return { ok: false, error: 'Enter a number such as 12.5, using a dot for decimals and no separators.' };
  }
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > AMOUNT_DECIMALS) return { ok: false, error: `Use at most ${AMOUNT_DECIMALS} decimals.` };
  const whole = (match[1] ?? '').replace(/^0+(?=\d)/, '') || '0';
  const value = fraction ? `${whole}.${fraction}` : whole;
  if (!allowZero && value === '0') return { ok: false, error: 'Enter an amount greater than zero.' };
  return { ok: true, value };
}

/** Whole millionths of a credit; malformed input counts as zero. */
export function toMicros(amount: string): bigint {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(amount.trim());
  if (!match || !(match[2] || match[3])) return 0n;
  const fraction = (match[3] ?? '').slice(0, AMOUNT_DECIMALS).padEnd(AMOUNT_DECIMALS, '0');
  const micros = BigInt(match[2] || '0') * SCALE + BigInt(fraction);
  return match[1] === '-' ? -micros : micros;
}

/** Canonical decimal string for a number of millionths. */
export function fromMicros(micros: bigint): string {
  const negative = micros < 0n;
  const size = negative ? -micros : micros;
  const whole = (size / SCALE).toString();
  const fraction = (size % SCALE).toString().padStart(AMOUNT_DECIMALS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

export function sumAmounts(amounts: string[]): string {
  return fromMicros(amounts.reduce((total, amount) => total + toMicros(amount), 0n));
}

export function isNegative(amount: string): boolean {
  return toMicros(amount) < 0n;
}

export function isZero(amount: string): boolean {
  return toMicros(amount) === 0n;
}

// A decimal string is formatted exactly as written (Intl.NumberFormat takes strings as exact
// decimals), with the browser's locale for separators.
const EXACT = new Intl.NumberFormat(undefined, { maximumFractionDigits: AMOUNT_DECIMALS });
const CENTS = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const AMOUNT = /^[+-]?\d+(\.\d+)?$/;

/** The exact amount with the locale's separators ("1,234.5" in English); anything else as given. */
export function formatAmount(amount: string): string {
  const text = amount.trim();
  return AMOUNT.test(text) ? EXACT.format(text as Intl.StringNumericLiteral) : amount;
}

/** The amount to two decimals (half away from zero), as tables and figures show it: "1,234.57". */
export function formatRounded(amount: string): string {
  const text = amount.trim();
  return AMOUNT.test(text) ? CENTS.format(text as Intl.StringNumericLiteral) : amount;
}

/** Like formatAmount, with an explicit "+" on credits received. */
export function formatSigned(amount: string): string {
  const formatted = formatAmount(amount);
  return toMicros(amount) > 0n && !formatted.startsWith('+') ? `+${formatted}` : formatted;
}

/** "1 credit", "12.5 credits". */
export function formatCredits(amount: string): string {
  return `${formatAmount(amount)} ${toMicros(amount) === SCALE ? 'credit' : 'credits'}`;
}
