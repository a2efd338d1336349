import { formatAmount, formatRounded, toMicros } from './amount';

interface AmountProps {
  /** A decimal string as the API sends it. */
  value: string;
  /** A "+" on amounts received. */
  signed?: boolean;
}

/**
 * An amount of credits as tables and figures show it: two decimals, the exact value (up to six
 * decimals) on hover and to assistive technology.
 */
export function Amount({ value, signed = false }: AmountProps) {
  const plus = signed && toMicros(value) > 0n ? '+' : '';
  const exact = `${plus}${formatAmount(value)}`;
  const shown = `${plus}${formatRounded(value)}`;
  if (shown === exact) return <>{shown}</>;
  return (
    <span title={`Exactly ${exact}`}>
      {shown}
    </span>
  );
}
