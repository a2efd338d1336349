/** A MIG card has 8 memory slices; each instance takes a run of them from its start. */
export const MEMORY_SLICES = 8;

/**
 * How many memory slices a MIG profile takes on a card of this size. The profile's name carries
 * its memory (`3g.40gb`, `1g.10gb+me`), and every slice holds an eighth of the card, so the
 * ratio gives the run length (1g.20gb takes two slices of an 80 GB card, 3g.40gb four).
 */
export function profileSlices(profile: string, cardMemoryMib: number): number {
  const match = /(\d+)g\.(\d+)gb/i.exec(profile);
  if (!match || cardMemoryMib <= 0) return 1;
  const cardGb = cardMemoryMib / 1024;
  const slices = Math.round((Number(match[2]) / cardGb) * MEMORY_SLICES);
  return Math.min(MEMORY_SLICES, Math.max(1, slices));
}
