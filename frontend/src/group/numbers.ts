/** How the My group page writes cards and hours. */
export const cards = (value: number) => value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

export function hours(seconds: number): string {
  const h = seconds / 3600;
  return `${h.toLocaleString(undefined, { maximumFractionDigits: 1 })} ${h === 1 ? 'hour' : 'hours'}`;
}
