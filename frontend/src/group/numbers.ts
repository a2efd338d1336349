/** How the My group page writes cards and hours. */
export const cards = (value: number) => value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

export function hours(seconds: number): string {
  const h = seconds / 3600;
  return `${h.toLocaleString(undefined, { maximumFractionDigits: 1 })} ${h === 1 ? 'hour' : 'hours'}`;
}

/** A fair-share weight: up to three decimals, as a policy sets it (0.001 to 1,000). */
export const weight = (value: number) => value.toLocaleString(undefined, { maximumFractionDigits: 3 });
